/**
 * Opening what the resolver approved without leaving a window for a swap. Files are opened with
 * O_NOFOLLOW and then checked again through the open handle: on Linux the kernel's own view of the
 * handle (`/proc/self/fd/N`) must still be inside the root; elsewhere the path is resolved again and must
 * lead to the same device and inode. Folders are held open the same way and, on Linux, every name inside
 * them is reached through `/proc/self/fd/N/<name>`, which behaves like the *at() system calls: a folder
 * swapped for a link after the check cannot redirect it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { deny, isInside } from './paths.js';
import { isPseudoFsPath } from './roots.js';

const C = fs.constants;
const NOFOLLOW = C.O_NOFOLLOW ?? 0;
const NONBLOCK = C.O_NONBLOCK ?? 0;
const DIRECTORY = C.O_DIRECTORY ?? 0;

/** `/proc/self/fd` when this OS has it (Linux), else null. */
export const PROC_FD: string | null = (() => {
  if (process.platform !== 'linux') return null;
  try {
    fs.readdirSync('/proc/self/fd');
    return '/proc/self/fd';
  } catch {
    return null;
  }
})();

/** Where the kernel says an open handle points, or null where that cannot be asked. */
export async function handlePath(fh: FileHandle): Promise<string | null> {
  if (!PROC_FD) return null;
  return fs.promises.readlink(`${PROC_FD}/${fh.fd}`);
}

/** Re-checks an open handle against the root after open (the defence against a swap between check and open). */
export async function verifyHandle(fh: FileHandle, expected: string, rootReal: string): Promise<fs.Stats> {
  const st = await fh.stat();
  const actual = await handlePath(fh);
  if (actual !== null) {
    if (!isInside(actual, rootReal) || isPseudoFsPath(actual)) deny('changed_during_open', 'The path changed while it was being opened.');
    return st;
  }
  let again: string;
  try {
    again = await fs.promises.realpath(expected);
  } catch {
    deny('changed_during_open', 'The path changed while it was being opened.');
  }
  const st2 = await fs.promises.stat(again);
  if (!isInside(again, rootReal) || st2.dev !== st.dev || st2.ino !== st.ino) {
    deny('changed_during_open', 'The path changed while it was being opened.');
  }
  return st;
}

/** Opens a resolved regular file for reading, re-checked after open. Closes it on any refusal. */
export async function openFileForRead(real: string, rootReal: string): Promise<{ fh: FileHandle; stat: fs.Stats }> {
  let fh: FileHandle;
  try {
    // O_NONBLOCK: a FIFO swapped in would otherwise block the open forever.
    fh = await fs.promises.open(real, C.O_RDONLY | NOFOLLOW | NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') deny('changed_during_open', 'The file was replaced by a link while it was being opened.');
    if (code === 'ENXIO') deny('special_file', 'Only regular files and folders can be used.');
    // Other OS refusals are mapped by `filesFunctions` (fromOsError) around every function.
    throw e;
  }
  try {
    const stat = await verifyHandle(fh, real, rootReal);
    if (!stat.isFile()) deny('special_file', 'Only regular files can be read.');
    return { fh, stat };
  } catch (e) {
    await fh.close().catch(() => {});
    throw e;
  }
}

/** A folder held open and verified; names inside it are reached through the handle where the OS allows. */
export class VerifiedDir {
  private constructor(
    private readonly fh: FileHandle | null,
    /** The folder's real path (for messages, trash and platforms without `/proc`). */
    readonly real: string,
    readonly rootReal: string,
    private readonly dev: number,
    private readonly ino: number,
  ) {}

  /**
   * Opens and verifies a resolved folder. `via` is the path to open it by (a child of an open folder's
   * handle, see `child`), when that is not `real` itself.
   */
  static async open(real: string, rootReal: string, via = real): Promise<VerifiedDir> {
    let fh: FileHandle | null = null;
    try {
      fh = await fs.promises.open(via, C.O_RDONLY | DIRECTORY | NOFOLLOW);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ELOOP' || code === 'ENOTDIR') deny('changed_during_open', 'The folder was replaced while it was being opened.');
      // Windows cannot open folders as files (there `via` is the path itself): fall back to path checks only.
      if (via !== real || (code !== 'EISDIR' && code !== 'EPERM')) throw e;
    }
    try {
      const st = fh ? await verifyHandle(fh, real, rootReal) : await fs.promises.stat(real);
      if (!st.isDirectory()) deny('changed_during_open', 'The folder was replaced while it was being opened.');
      return new VerifiedDir(fh, real, rootReal, st.dev, st.ino);
    } catch (e) {
      await fh?.close().catch(() => {});
      throw e;
    }
  }

  /** The path to use for `name` inside this folder. */
  child(name: string): string {
    if (name.includes('/') || name === '..' || name === '.' || name === '') throw new Error('bad child name');
    return PROC_FD && this.fh ? `${PROC_FD}/${this.fh.fd}/${name}` : path.join(this.real, name);
  }

  /** The path of this folder itself that goes through the handle where possible. */
  self(): string {
    return PROC_FD && this.fh ? `${PROC_FD}/${this.fh.fd}` : this.real;
  }

  /**
   * Checks, just before a change, that the folder's path still leads to the folder that was opened.
   * Needed only where names are reached by path (no `/proc`); cheap enough to run everywhere.
   */
  async recheck(): Promise<void> {
    let st: fs.Stats;
    try {
      const again = await fs.promises.realpath(this.real);
      if (!isInside(again, this.rootReal)) throw new Error('moved');
      st = await fs.promises.stat(again);
    } catch {
      deny('changed_during_open', 'The folder changed during the operation.');
    }
    if (st.dev !== this.dev || st.ino !== this.ino) deny('changed_during_open', 'The folder changed during the operation.');
  }

  /** Flushes the folder entry (after a rename) where the OS supports it. */
  async sync(): Promise<void> {
    await this.fh?.sync().catch(() => {});
  }

  async close(): Promise<void> {
    await this.fh?.close().catch(() => {});
  }

  /** Opens a subfolder by name through this handle, refusing links. */
  async openChild(name: string): Promise<VerifiedDir> {
    return VerifiedDir.open(path.join(this.real, name), this.rootReal, this.child(name));
  }
}

/** Runs `fn` with the verified parent folder of a resolved target, closing it afterwards. */
export async function withDir<T>(real: string, rootReal: string, fn: (d: VerifiedDir) => Promise<T>): Promise<T> {
  const d = await VerifiedDir.open(real, rootReal);
  try {
    return await fn(d);
  } finally {
    await d.close();
  }
}
