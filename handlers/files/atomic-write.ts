/**
 * Writes that are never torn: content goes to a new temp file in the target's (verified) folder, is
 * flushed, and only then made visible by one rename (or, for "create", a hard link that fails if the name
 * was taken meanwhile). A cancel or timeout before that point removes the temp file and leaves the old file
 * as it was; `ctx.commit()` is called just before the rename.
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { fail, type CallContext } from '../../src/sdk/index.js';
import type { VerifiedDir } from './handles.js';
import { deny, isInside } from './paths.js';
import { handlePath } from './handles.js';

/** How a write treats an existing file. */
export type WriteMode = 'create' | 'overwrite' | 'append';

const C = fs.constants;

/** Fails with the documented error for "exists and overwrite not asked for". */
export function alreadyExists(): never {
  fail('execution_failed', 'A file with that name already exists; ask to overwrite it.', { details: { reason: 'exists' } });
}

/** Creates a temp file inside `dir` exclusively and checks it really landed there. */
export async function createTemp(dir: VerifiedDir): Promise<{ fh: FileHandle; name: string }> {
  const name = `.aios-${randomBytes(9).toString('hex')}.tmp`;
  const fh = await fs.promises.open(dir.child(name), C.O_WRONLY | C.O_CREAT | C.O_EXCL | (C.O_NOFOLLOW ?? 0), 0o600);
  const actual = await handlePath(fh);
  if (actual !== null && !isInside(actual, dir.rootReal)) {
    // Only reachable if the folder was swapped under us on a platform without handle-relative names.
    await fh.close().catch(() => {});
    await fs.promises.unlink(actual).catch(() => {});
    deny('changed_during_open', 'The folder changed while the file was being written.');
  }
  return { fh, name };
}

/**
 * Writes `name` in `dir` atomically. `fill` writes the new bytes into the temp file starting at `offset`
 * (after the old content for append) and returns how many it wrote.
 */
export async function atomicWrite(opts: {
  dir: VerifiedDir;
  name: string;
  mode: WriteMode;
  ctx: Pick<CallContext, 'signal' | 'commit'>;
  /** The existing file, opened and verified, when there is one. */
  existing?: { fh: FileHandle; stat: fs.Stats } | undefined;
  fill: (fh: FileHandle, offset: number) => Promise<number>;
  copyOld?: (src: FileHandle, dst: FileHandle) => Promise<number>;
}): Promise<{ size: number; created: boolean }> {
  const { dir, name, mode, ctx, existing } = opts;
  if (existing && mode === 'create') alreadyExists();
  const tmp = await createTemp(dir);
  let open = true;
  let visible = false;
  try {
    let offset = 0;
    if (existing && mode === 'append' && opts.copyOld) offset = await opts.copyOld(existing.fh, tmp.fh);
    const wrote = await opts.fill(tmp.fh, offset);
    await tmp.fh.chmod(existing ? existing.stat.mode & 0o7777 : 0o644);
    await tmp.fh.sync();
    await tmp.fh.close();
    open = false;
    ctx.signal.throwIfAborted();
    await dir.recheck();
    ctx.commit();
    if (mode === 'create') {
      await linkNoClobber(dir.child(tmp.name), dir.child(name));
    } else {
      await fs.promises.rename(dir.child(tmp.name), dir.child(name));
    }
    visible = true;
    await dir.sync();
    return { size: offset + wrote, created: !existing };
  } finally {
    if (open) await tmp.fh.close().catch(() => {});
    // The temporary name goes in every case but a rename (after a link it is a second name of the file).
    if (!visible || mode === 'create') await fs.promises.unlink(dir.child(tmp.name)).catch(() => {});
  }
}

/**
 * Makes the file at `from` visible at `to` only if `to` is free at that instant: a hard link, after
 * which `from` is still there for the caller to remove ('linked'). On file systems without hard links
 * (FAT, some network shares): check, then rename ('renamed'). Other errors (EXDEV, EACCES…) are thrown
 * as they are.
 */
export async function linkNoClobber(from: string, to: string): Promise<'linked' | 'renamed'> {
  try {
    await fs.promises.link(from, to);
    return 'linked';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') alreadyExists();
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw e;
    const exists = await fs.promises.lstat(to).then(() => true, () => false);
    if (exists) alreadyExists();
    await fs.promises.rename(from, to);
    return 'renamed';
  }
}
