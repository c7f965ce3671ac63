/**
 * A third-party adapter's verified code runs from a private copy written from the bytes the check hashed, so
 * swapping a file in the adapter folder between the check and the start changes nothing that runs. A
 * consequence: the code must be self-contained (relative imports inside the folder and Node's built-ins),
 * since a package outside the folder was never signed. The copy is started by local-adapter.ts (an MCP
 * server, or the adapter host for a JavaScript adapter) and removed by its dispose.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { jcs } from '../protocol/hash.js';
import { sha256Tag, type CodeBytes } from './code-binding.js';
import type { CodeBinding } from '../protocol/manifest-schemas.js';

/** What a copy is made of: the checked binding and its bytes, and where copies go. */
export interface CheckedCode {
  /** The adapter id (names its private copy). */
  id: string;
  /** A private folder (0700) that holds the copies. */
  codeDir: string;
  binding: CodeBinding;
  /** Every bound file's bytes, exactly as hashed. */
  bytes: CodeBytes;
}

/**
 * Writes the checked bytes into a new `<codeDir>/<id>-<digest>-<random>/` (folders 0700, files 0600);
 * returns the folder. Each load gets its own folder: the dispose of an earlier load of the same code
 * (stopping its process, then removing its copy) may still be under way and must not remove this one.
 */
export async function privateCopy(code: CheckedCode): Promise<string> {
  const digest = sha256Tag(Buffer.from(jcs(code.binding.files))).slice(7, 23);
  const dir = await mkdtemp(join(code.codeDir, `${code.id.replace(/[^A-Za-z0-9._-]/g, '_')}-${digest}-`));
  for (const [rel, bytes] of code.bytes) {
    const file = join(dir, ...rel.split('/'));
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    await writeFile(file, bytes, { mode: 0o600, flag: 'wx' });
  }
  return dir;
}
