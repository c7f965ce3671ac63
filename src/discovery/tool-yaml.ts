/**
 * `tool.aios.yaml` → Adapter Card (PROTOCOL.md §7.3): `tool.id → adapter.id`, `tool.name → adapter.name`,
 * `tool.version → adapter.version`, `capabilities[] → skills[]`, `permissions[] → skills[].permission_level`.
 */
import { parse } from 'yaml';
import { PROTOCOL_VERSION } from '../protocol/messages.js';
import type { AdapterCard, CardSkill, ToolYaml } from '../protocol/manifest-schemas.js';
import { validateToolYaml } from '../protocol/manifest-schemas.js';

/** A manifest problem with the JSON Pointer of the offending value. */
export class ManifestError extends Error {
  constructor(message: string, readonly violations: { pointer: string; message: string }[] = []) {
    super(message);
    this.name = 'ManifestError';
  }
}

/** Parses and validates `tool.aios.yaml` text. */
export function parseToolYaml(text: string): ToolYaml {
  let doc: unknown;
  try {
    doc = parse(text, { uniqueKeys: true });
  } catch (e) {
    throw new ManifestError(`tool.aios.yaml is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  const violations = validateToolYaml(doc);
  if (violations.length) throw new ManifestError(`tool.aios.yaml does not match its schema (${violations.map((v) => `${v.pointer || '/'} ${v.message}`).join('; ')})`, violations);
  return doc as ToolYaml;
}

/** Maps a validated `tool.aios.yaml` to an (unsigned) Adapter Card. Every capability needs a permission. */
export function toolYamlToCard(y: ToolYaml): AdapterCard {
  const permissions = y.permissions ?? [];
  const levels = new Map(permissions.map((p) => [p.capability, p.level]));
  for (const p of permissions) {
    if (!y.capabilities.some((c) => c.id === p.capability)) throw new ManifestError(`permissions names an unknown capability ${p.capability}`);
  }
  const skills: CardSkill[] = y.capabilities.map(({ permission, ...c }) => {
    const listed = levels.get(c.id);
    if (listed && permission && listed !== permission) throw new ManifestError(`capability ${c.id} has two different permission levels`);
    const level = listed ?? permission;
    if (!level) throw new ManifestError(`capability ${c.id} has no entry in permissions`);
    return { ...c, permission_level: level };
  });
  const card: AdapterCard = {
    adapter: {
      id: y.tool.id,
      name: y.tool.name,
      version: y.tool.version,
      protocol_version: y.tool.protocol_version ?? PROTOCOL_VERSION,
      ...(y.tool.description !== undefined && { description: y.tool.description }),
      ...(y.tool.author !== undefined && { author: y.tool.author }),
      ...(y.tool.homepage !== undefined && { homepage: y.tool.homepage }),
      ...(y.tool.license !== undefined && { license: y.tool.license }),
    },
    capabilities: y.adapter_capabilities ?? {},
    skills,
  };
  if (y.requirements) card.requirements = y.requirements;
  return card;
}
