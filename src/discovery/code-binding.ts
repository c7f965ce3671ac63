/**
 * Binds an adapter's code to its signed card: `card.code.files` maps every file of the adapter folder (except
 * `adapter.json`) to its SHA-256, so one changed byte anywhere fails verification before anything is loaded.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, posix, relative, sep } from 'node:path';
import type { CodeBinding } from '../protocol/manifest-schemas.js';

/** File names never bound: the card itself (it carries the binding) and editor/OS litter. */
const UNBOUND = new Set(['adapter.json', '.DS_Store', 'Thumbs.db']);

/** `sha256-` + base64url digest of bytes. */
export function sha256Tag(bytes: Uint8Array): string {
  return 'sha256-' + createHash('sha256').update(bytes).digest('base64url');
}

/** Relative (posix) paths of the files a binding covers in `dir`, sorted. Dot-files and folders are skipped. */
export async function boundFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const ent of await readdir(d, { withFileTypes: true })) {
      if (ent.name.startsWith('.') || (d === dir && UNBOUND.has(ent.name))) continue;
      const p = join(d, ent.name);
      if (ent.isDirectory()) await walk(p);
      else if (ent.isFile()) out.push(relative(dir, p).split(sep).join(posix.sep));
    }
  };
  await walk(dir);
  return out.sort();
}

/** Computes the binding of `dir` with `entry` as the module to load. */
export async function computeCodeBinding(dir: string, entry: string): Promise<CodeBinding> {
  const files: Record<string, string> = {};
  for (const f of await boundFiles(dir)) files[f] = sha256Tag(await readFile(join(dir, f)));
  if (!(entry in files)) throw new Error(`entry ${entry} is not a file of the adapter folder`);
  return { entry, files };
}

/**
 * Checks `dir` against a binding; returns the first problem as one sentence, or undefined when it matches.
 * Extra files are refused too, so code cannot be slipped in next to signed files.
 */
export async function checkCodeBinding(dir: string, binding: CodeBinding): Promise<string | undefined> {
  if (!(binding.entry in binding.files)) return `the entry ${binding.entry} is not among the signed files`;
  for (const f of Object.keys(binding.files)) {
    if (f.split('/').some((seg) => seg === '..' || seg === '') || f.startsWith('/')) return `signed file name ${f} is not a plain relative path`;
  }
  const present = await boundFiles(dir);
  for (const f of present) if (!(f in binding.files)) return `file ${f} is not covered by the signature`;
  for (const [f, tag] of Object.entries(binding.files)) {
    let bytes: Buffer;
    try {
      bytes = await readFile(join(dir, ...f.split('/')));
    } catch {
      return `signed file ${f} is missing`;
    }
    if (sha256Tag(bytes) !== tag) return `file ${f} does not match its signed hash`;
  }
  return undefined;
}
