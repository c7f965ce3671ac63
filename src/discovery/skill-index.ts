/**
 * The skill index of PROTOCOL.md §7.2 (skill-sharing discovery, chapter 5): which skills a caller may see,
 * the `?type=` filter, unique ids, and descriptor URLs.
 */
import type { Descriptor } from '../protocol/messages.js';

/** Version of the skill-sharing index format. */
export const SKILL_INDEX_VERSION = '1.0.0';

/** One entry of the index. */
export interface SkillIndexEntry {
  id: string;
  name: string;
  capability_type: string;
  description: string;
  descriptor_url: string;
  access: Descriptor['access'];
  version: string;
}

/** The document served at `/.well-known/skill-sharing`. */
export interface SkillIndex {
  protocol: { version: string };
  provider: { name: string; url?: string };
  skills: SkillIndexEntry[];
}

/** True when a caller with (or without) credentials may see this skill: private ones need credentials. */
export function isVisible(d: Pick<Descriptor, 'access'>, authenticated: boolean): boolean {
  return authenticated || d.access !== 'private';
}

/**
 * The one rule of what is published, everywhere (the bridge's function list, both Adapter Card variants,
 * the skill index and descriptors): a function `functions.disabled` turns off is published nowhere; a
 * `private` one only to a caller with credentials. `restricted` ones stay listed (§7.2).
 */
export function publishedDescriptors(all: readonly Descriptor[], o: { authenticated: boolean; disabled: (id: string) => boolean }): Descriptor[] {
  return all.filter((d) => !o.disabled(d.id) && isVisible(d, o.authenticated));
}

/** URL of a skill's full descriptor under `baseUrl`. */
export function descriptorUrl(baseUrl: string, id: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/skills/${encodeURIComponent(id)}/descriptor.json`;
}

/** Builds the index; a repeated id keeps its first descriptor, so ids stay unique. */
export function buildSkillIndex(
  descriptors: readonly Descriptor[],
  opts: { provider: { name: string; url?: string }; baseUrl: string; authenticated: boolean; type?: string | undefined },
): SkillIndex {
  const seen = new Set<string>();
  const skills: SkillIndexEntry[] = [];
  for (const d of descriptors) {
    if (seen.has(d.id)) continue;
    seen.add(d.id);
    if (!isVisible(d, opts.authenticated)) continue;
    if (opts.type !== undefined && d.capability_type !== opts.type) continue;
    skills.push({
      id: d.id,
      name: d.name,
      capability_type: d.capability_type,
      description: d.description,
      descriptor_url: descriptorUrl(opts.baseUrl, d.id),
      access: d.access,
      version: d.version,
    });
  }
  skills.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { protocol: { version: SKILL_INDEX_VERSION }, provider: opts.provider, skills };
}

/** The descriptor a caller may read at `/skills/<id>/descriptor.json`, or undefined (absent or hidden). */
export function visibleDescriptor(descriptors: readonly Descriptor[], id: string, authenticated: boolean): Descriptor | undefined {
  const d = descriptors.find((x) => x.id === id);
  return d && isVisible(d, authenticated) ? d : undefined;
}
