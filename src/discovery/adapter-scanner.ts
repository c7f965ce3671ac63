/**
 * Finds third-party adapters on disk (PROTOCOL.md §7.3): each sub-folder of an adapters directory with an
 * `adapter.json` (Adapter Card) or a `tool.aios.yaml`, and applies the priority rule
 * Adapter Card JSON > `tool.aios.yaml` > `.desktop` inference, then directory order.
 */
import { readdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { AdapterCard, McpSpec } from '../protocol/manifest-schemas.js';
import { ADAPTER_ID_PATTERN, validateCard } from '../protocol/manifest-schemas.js';

const ADAPTER_ID = new RegExp(ADAPTER_ID_PATTERN);
import { parseToolYaml, toolYamlToCard } from './tool-yaml.js';
import { AdapterProblem, problemOf, type ProblemMessage } from './adapter-problem.js';

/** Manifest file names in an adapter folder. */
export const CARD_FILE = 'adapter.json';
export const TOOL_YAML_FILE = 'tool.aios.yaml';

/** One adapter folder as found, before verification. */
export interface AdapterCandidate {
  /** The adapter id, or the folder name when the manifest could not be read. */
  id: string;
  dir: string;
  /** Index of its adapters directory in the search order (lower wins a tie). */
  rootIndex: number;
  kind: 'card' | 'yaml';
  /** The raw parsed `adapter.json` (what the signature covers). */
  raw?: unknown;
  card?: AdapterCard;
  /** Module to load for an unsigned `tool.aios.yaml` adapter. */
  entry?: string;
  /** Why the manifest is unusable (English). */
  error?: string;
  /** `error` as a catalogue message, for the reader's language. */
  problem?: ProblemMessage;
}

/** The candidate fields that say why a manifest is unusable. */
function unusable(p: AdapterProblem): { error: string; problem: ProblemMessage } {
  return { error: p.message, problem: p.said };
}

/**
 * Default adapters directories, user's first so a user install overrides a system one of the same id:
 * Linux `~/.local/share/aios/adapters`, `/usr/share/aios/adapters`; macOS `~/Library/Application Support/AIOS/
 * adapters`, `/Library/Application Support/AIOS/adapters`; Windows `%LOCALAPPDATA%\AIOS\adapters`,
 * `%ProgramData%\AIOS\adapters`.
 */
export function defaultAdapterDirs(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string[] {
  if (platform === 'win32') {
    const local = env['LOCALAPPDATA'] ?? join(homedir(), 'AppData', 'Local');
    const program = env['ProgramData'] ?? 'C:\\ProgramData';
    return [join(local, 'AIOS', 'adapters'), join(program, 'AIOS', 'adapters')];
  }
  if (platform === 'darwin') {
    return [join(homedir(), 'Library', 'Application Support', 'AIOS', 'adapters'), '/Library/Application Support/AIOS/adapters'];
  }
  const dataHome = env['XDG_DATA_HOME'] || join(homedir(), '.local', 'share');
  return [join(dataHome, 'aios', 'adapters'), '/usr/share/aios/adapters'];
}

/**
 * Reads one adapter folder: its card from `adapter.json`, else mapped from `tool.aios.yaml`; a folder
 * with neither is not an adapter (undefined). Problems come back as `error`, never thrown.
 */
export async function readCandidate(dir: string, name: string, rootIndex: number): Promise<AdapterCandidate | undefined> {
  const cardText = await readFile(join(dir, CARD_FILE), 'utf8').catch(() => undefined);
  if (cardText !== undefined) {
    let raw: unknown;
    try {
      raw = JSON.parse(cardText);
    } catch {
      return { id: name, dir, rootIndex, kind: 'card', ...unusable(new AdapterProblem('core.adapter.not_json', { file: CARD_FILE })) };
    }
    // The id of a card that fails its schema is shown in the listing only if it is a well-formed id (it
    // names folders and sources later); otherwise the folder's name stands in.
    const rawId = (raw as { adapter?: { id?: unknown } } | null)?.adapter?.id;
    const id = typeof rawId === 'string' && ADAPTER_ID.test(rawId) ? rawId : name;
    const v = validateCard(raw);
    if (v.length) return { id, dir, rootIndex, kind: 'card', raw, ...unusable(new AdapterProblem('core.adapter.schema', { file: CARD_FILE }, v)) };
    return { id, dir, rootIndex, kind: 'card', raw, card: raw as AdapterCard };
  }
  const yamlText = await readFile(join(dir, TOOL_YAML_FILE), 'utf8').catch(() => undefined);
  if (yamlText === undefined) return undefined;
  try {
    const y = parseToolYaml(yamlText);
    const c: AdapterCandidate = { id: y.tool.id, dir, rootIndex, kind: 'yaml', card: toolYamlToCard(y) };
    const entry = y.entry ?? (y.mcp ? mcpEntry(y.mcp) : undefined);
    if (entry) c.entry = entry;
    return c;
  } catch (e) {
    return { id: name, dir, rootIndex, kind: 'yaml', error: (e as Error).message, problem: problemOf(e) };
  }
}

/**
 * The file an `mcp` adapter's code binding names as its entry (the binding covers every file either way):
 * its command when that is a file of the folder, else the first argument naming one, else the manifest.
 */
export function mcpEntry(mcp: McpSpec): string {
  const rel = (p: string) => p.replace(/^\.\//, '');
  if (!isAbsolute(mcp.command)) return rel(mcp.command);
  const arg = (mcp.args ?? []).find((a) => !a.startsWith('-') && !isAbsolute(a) && !a.includes('{') && /\.[a-z]+$/i.test(a));
  return arg ? rel(arg) : TOOL_YAML_FILE;
}

/** Why a manifest lying loose in an adapters directory is not loaded (said once per scan, in the log). */
export const LOOSE_MANIFEST_REASON = 'an adapter is a folder: move this file to <adapter id>/tool.aios.yaml, next to its code, to load it';

/**
 * Reads every adapter folder under the directories (missing directories are skipped). A `*.yaml`,
 * `*.yml` or `*.json` file lying directly in a directory is not an adapter (its code and signature have
 * no folder); `onLoose` is told about it, so it is never ignored without a word.
 */
export async function scanAdapterDirs(dirs: readonly string[], onLoose?: (file: string) => void): Promise<AdapterCandidate[]> {
  const out: AdapterCandidate[] = [];
  for (const [rootIndex, root] of dirs.entries()) {
    const ents = await readdir(root, { withFileTypes: true }).catch(() => []);
    for (const ent of ents.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (ent.isFile() && /\.(ya?ml|json)$/i.test(ent.name) && !ent.name.startsWith('.')) onLoose?.(join(root, ent.name));
      if (!ent.isDirectory() || ent.name.startsWith('.')) continue;
      const c = await readCandidate(join(root, ent.name), ent.name, rootIndex);
      if (c) out.push(c);
    }
  }
  return out;
}

/** Picks one candidate per adapter id: card over yaml, then the earlier directory, then folder name. */
export function selectByPriority(cands: readonly AdapterCandidate[]): { selected: AdapterCandidate[]; shadowed: AdapterCandidate[] } {
  const rank = (c: AdapterCandidate) => (c.kind === 'card' ? 0 : 1);
  const best = new Map<string, AdapterCandidate>();
  const shadowed: AdapterCandidate[] = [];
  for (const c of cands) {
    const cur = best.get(c.id);
    if (!cur) best.set(c.id, c);
    else if (rank(c) < rank(cur) || (rank(c) === rank(cur) && c.rootIndex < cur.rootIndex)) {
      shadowed.push(cur);
      best.set(c.id, c);
    } else shadowed.push(c);
  }
  return { selected: [...best.values()], shadowed };
}
