/**
 * Binds an adapter's code to its signed card: `card.code.files` maps every file of the adapter folder (except
 * `adapter.json` and OS litter) to its SHA-256, so one changed byte anywhere fails verification before
 * anything is loaded. Hidden files are bound like any other (an entry can import `./.x.mjs`), a link that
 * leaves the folder refuses the folder, and the check hands back the very bytes it hashed so the loader runs
 * those (from a private copy), never what the folder holds a moment later.
 */
import { createHash } from 'node:crypto';
import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import { join, posix, relative, sep } from 'node:path';
import type { CodeBinding } from '../protocol/manifest-schemas.js';
import type { CoreKey } from '../i18n/index.js';
import { AdapterProblem } from './adapter-problem.js';

/** The card itself (top level only): it carries the binding. */
const CARD = 'adapter.json';
/** Editor/OS litter, never bound and never loaded, at any depth. */
const LITTER = new Set(['.DS_Store', 'Thumbs.db', 'desktop.ini']);

/** `sha256-` + base64url digest of bytes. */
export function sha256Tag(bytes: Uint8Array): string {
  return 'sha256-' + createHash('sha256').update(bytes).digest('base64url');
}

/** A folder that cannot be bound or checked: a link leaving it, a link to a folder, something not a file. */
export class AdapterFolderError extends AdapterProblem {
  constructor(key: CoreKey, params: Record<string, string>) {
    super(key, params);
    this.name = 'AdapterFolderError';
  }
}

function inside(root: string, p: string): boolean {
  const r = relative(root, p);
  return r !== '' && !r.startsWith('..') && !r.startsWith(sep) && !/^[A-Za-z]:/.test(r);
}

/**
 * Relative (posix) paths of the files a binding covers in `dir`, sorted: every regular file, hidden ones
 * included, except `adapter.json` at the top and OS litter. A symbolic link is followed only to a file
 * inside the folder; a link to a folder or out of the folder throws {@link AdapterFolderError}.
 */
export async function boundFiles(dir: string): Promise<string[]> {
  const root = await realpath(dir);
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const ent of await readdir(d, { withFileTypes: true })) {
      if (LITTER.has(ent.name) || (d === dir && ent.name === CARD)) continue;
      const p = join(d, ent.name);
      const rel = relative(dir, p).split(sep).join(posix.sep);
      if (ent.isDirectory()) await walk(p);
      else if (ent.isFile()) out.push(rel);
      else if (ent.isSymbolicLink()) {
        const target = await realpath(p).catch(() => undefined);
        if (!target || !inside(root, target)) throw new AdapterFolderError('core.adapter.link_outside', { file: rel });
        if (!(await lstat(target)).isFile()) throw new AdapterFolderError('core.adapter.link_not_file', { file: rel });
        out.push(rel);
      } else throw new AdapterFolderError('core.adapter.not_a_file', { file: rel });
    }
  };
  await walk(dir);
  return out.sort();
}

/** The bytes of an adapter's code as they were hashed, by relative posix path. */
export type CodeBytes = ReadonlyMap<string, Buffer>;

/** Computes the binding of `dir` with `entry` as the module to load, and the bytes it covers. */
export async function readCodeBinding(dir: string, entry: string): Promise<{ binding: CodeBinding; bytes: CodeBytes }> {
  const files: Record<string, string> = {};
  const bytes = new Map<string, Buffer>();
  for (const f of await boundFiles(dir)) {
    const b = await readFile(join(dir, ...f.split('/')));
    files[f] = sha256Tag(b);
    bytes.set(f, b);
  }
  if (!(entry in files)) throw new AdapterProblem('core.adapter.entry_not_in_folder', { entry });
  return { binding: { entry, files }, bytes };
}

/** Computes the binding of `dir` with `entry` as the module to load. */
export async function computeCodeBinding(dir: string, entry: string): Promise<CodeBinding> {
  return (await readCodeBinding(dir, entry)).binding;
}

/**
 * Checks `dir` against a binding. Returns the first problem, or the bytes that matched
 * (what the loader must run). Extra files are refused too, so code cannot be slipped in next to signed files.
 */
export async function readCheckedCode(dir: string, binding: CodeBinding): Promise<{ problem: AdapterProblem } | { bytes: CodeBytes }> {
  if (!(binding.entry in binding.files)) return { problem: new AdapterProblem('core.adapter.entry_not_signed', { entry: binding.entry }) };
  for (const f of Object.keys(binding.files)) {
    if (f.split('/').some((seg) => seg === '..' || seg === '.' || seg === '') || f.startsWith('/') || f.includes('\\')) {
      return { problem: new AdapterProblem('core.adapter.bad_signed_name', { file: f }) };
    }
  }
  let present: string[];
  try {
    present = await boundFiles(dir);
  } catch (e) {
    return { problem: e instanceof AdapterFolderError ? e : new AdapterProblem('core.adapter.folder_unreadable', { detail: (e as Error).message }) };
  }
  for (const f of present) if (!(f in binding.files)) return { problem: new AdapterProblem('core.adapter.not_covered', { file: f }) };
  const bytes = new Map<string, Buffer>();
  for (const [f, tag] of Object.entries(binding.files)) {
    let b: Buffer;
    try {
      b = await readFile(join(dir, ...f.split('/')));
    } catch {
      return { problem: new AdapterProblem('core.adapter.signed_file_missing', { file: f }) };
    }
    // These bytes, once hashed, are the ones that run: a file swapped after this read is never loaded.
    if (sha256Tag(b) !== tag) return { problem: new AdapterProblem('core.adapter.hash_mismatch', { file: f }) };
    bytes.set(f, b);
  }
  return { bytes };
}

/** Checks `dir` against a binding; returns the first problem, or undefined when it matches. */
export async function checkCodeBinding(dir: string, binding: CodeBinding): Promise<AdapterProblem | undefined> {
  const r = await readCheckedCode(dir, binding);
  return 'problem' in r ? r.problem : undefined;
}
