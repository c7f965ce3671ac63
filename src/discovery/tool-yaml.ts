/**
 * `tool.aios.yaml` → Adapter Card (PROTOCOL.md §7.3): `tool.id → adapter.id`, `tool.name → adapter.name`,
 * `tool.version → adapter.version`, `capabilities[] → skills[]`, `permissions[] → skills[].permission_level`.
 */
import { parse } from 'yaml';
import { yamlErrorParts } from '../base/yaml-error.js';
import { PROTOCOL_VERSION } from '../protocol/messages.js';
import type { AdapterCard, CardSkill, ToolYaml } from '../protocol/manifest-schemas.js';
import { validateToolYaml } from '../protocol/manifest-schemas.js';
import type { SchemaViolation } from '../protocol/schema-validator.js';
import type { CoreKey } from '../i18n/index.js';
import { AdapterProblem } from './adapter-problem.js';

const FILE = 'tool.aios.yaml';

/** A manifest problem (a catalogue message), with the JSON Pointers of the offending values when any. */
export class ManifestError extends AdapterProblem {
  readonly violations: SchemaViolation[];
  constructor(key: CoreKey, params?: Record<string, string | number>, violations?: SchemaViolation[]) {
    super(key, params, violations);
    this.violations = violations ?? [];
    this.name = 'ManifestError';
  }
}

/**
 * The parser's complaint as a problem: its line and column as params, its own words (the first line,
 * without the position it repeats) as the detail, which the yaml library only has in English.
 */
function yamlProblem(e: unknown): ManifestError {
  const { line, column, detail } = yamlErrorParts(e);
  if (line === undefined || column === undefined) return new ManifestError('core.adapter.yaml', { file: FILE, detail });
  return new ManifestError('core.adapter.yaml_at', { file: FILE, line, column, detail });
}

/** Parses and validates `tool.aios.yaml` text. */
export function parseToolYaml(text: string): ToolYaml {
  let doc: unknown;
  try {
    doc = parse(text, { uniqueKeys: true });
  } catch (e) {
    throw yamlProblem(e);
  }
  const violations = validateToolYaml(doc);
  if (violations.length) throw new ManifestError('core.adapter.schema', { file: FILE }, violations);
  return doc as ToolYaml;
}

/**
 * Maps a validated `tool.aios.yaml` to an (unsigned) Adapter Card. Every capability needs a permission; an
 * `mcp` adapter has no capabilities (its server's tools are listed when it runs) and carries `mcp` instead.
 */
export function toolYamlToCard(y: ToolYaml): AdapterCard {
  if (!y.capabilities === !y.mcp) throw new ManifestError('core.adapter.mcp_or_capabilities');
  if (y.mcp && (y.entry !== undefined || y.permissions !== undefined)) throw new ManifestError('core.adapter.mcp_extra');
  const permissions = y.permissions ?? [];
  const capabilities = y.capabilities ?? [];
  const levels = new Map(permissions.map((p) => [p.capability, p.level]));
  for (const p of permissions) {
    if (!capabilities.some((c) => c.id === p.capability)) throw new ManifestError('core.adapter.unknown_capability', { capability: p.capability });
  }
  const skills: CardSkill[] = capabilities.map(({ permission, ...c }) => {
    const listed = levels.get(c.id);
    if (listed && permission && listed !== permission) throw new ManifestError('core.adapter.two_levels', { capability: c.id });
    const level = listed ?? permission;
    if (!level) throw new ManifestError('core.adapter.no_permission', { capability: c.id });
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
  if (y.mcp) card.mcp = y.mcp;
  return card;
}
