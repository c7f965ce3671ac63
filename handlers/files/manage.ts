/** Functions that change the tree: files.mkdir, files.move, files.copy. All go through confirmation. */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { defineFunction, fail, type CallContext, type CallResource, type Message } from '../../src/sdk/index.js';
import { alreadyExists, atomicWrite, linkNoClobber } from './atomic-write.js';
import { type FilesEnv, descriptor, knownBefore, pathProps, resourceAhead, resourcesFor, RootArg, schema } from './common.js';
import { askedMsg, countEntries, countMsg, folderMsg, msg, sizeMsg, whereMsg } from './describe.js';
import { VerifiedDir, openFileForRead, withDir } from './handles.js';
import { copyHandle } from './io.js';
import { checkWritableName, isDeniedName, isHiddenName } from './limits.js';
import { checkHardlinks, checkWalked, deny, isInside, locateForCreate, resolvePath, type PathArg, type Resolved } from './paths.js';

/** mkdir's resources; a file in the way of the folder (or of a folder above it) ends the call before anyone is asked. */
async function mkdirResources(env: FilesEnv, a: PathArg): Promise<CallResource[]> {
  const { resource } = await resourceAhead(env, 'write', a);
  const { rootReal, segs } = await locateForCreate(env, a);
  // resourceAhead has refused a link out of the folder among the parts that exist.
  for (let n = 1; n <= segs.length; n++) {
    const st = await fs.promises.stat(path.join(rootReal, ...segs.slice(0, n))).catch(() => undefined);
    if (!st) break;
    if (!st.isDirectory()) fail('execution_failed', 'A file is in the way of the folder.', { details: { reason: 'not_folder' } });
  }
  return [resource];
}

/** files.mkdir */
export function mkdirFn(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.mkdir',
      name: 'Create a folder',
      description: 'Creates a folder inside a folder the user has shared for writing; with parents: true also the missing folders above it. Succeeds without change when the folder exists.',
      permission_level: 'high',
      risk: { read_only: false, destructive: false, idempotent: true, physical: false },
      examples: ['Create a folder Invoices/2025 in Documents'],
      input_schema: schema({ ...pathProps, parents: Type.Optional(Type.Boolean()) }, ['path']),
      output_schema: schema({ root: Type.String(), path: Type.String(), created: Type.Boolean() }, ['root', 'path', 'created']),
    }),
    resources: (a) => mkdirResources(env, a),
    describe: (a) => msg(a.parents ? 'files.mkdir.parents' : 'files.mkdir', { target: askedMsg(a) }),
    async run(a, ctx) {
      const { root, rootReal, segs } = await locateForCreate(env, a);
      if (segs.length === 0) return { root: root.name, path: '', created: false };
      for (const s of segs) checkWritableName(s, env.limits);
      let dir = await VerifiedDir.open(rootReal, rootReal);
      let created = false;
      try {
        for (const [i, seg] of segs.entries()) {
          ctx.signal.throwIfAborted();
          const last = i === segs.length - 1;
          let st: fs.Stats | undefined;
          try {
            st = await fs.promises.lstat(dir.child(seg));
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
          }
          if (!st) {
            if (!last && !a.parents) fail('execution_failed', 'The parent folder does not exist.', { details: { reason: 'parent_not_found' } });
            await dir.recheck();
            if (last) ctx.commit();
            try {
              await fs.promises.mkdir(dir.child(seg), { mode: 0o755 });
              created = last;
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
            }
          }
          let nextReal = path.join(dir.real, seg);
          if (st?.isSymbolicLink()) {
            try {
              nextReal = await fs.promises.realpath(dir.child(seg));
            } catch {
              deny('dangling_symlink', 'The path goes through a link to something that does not exist.');
            }
            checkWalked(env, rootReal, nextReal, undefined);
          } else if (st && !st.isDirectory()) {
            fail('execution_failed', 'A file is in the way of the folder.', { details: { reason: 'not_folder' } });
          }
          const next = st?.isSymbolicLink() ? await VerifiedDir.open(nextReal, rootReal) : await dir.openChild(seg);
          await dir.close();
          dir = next;
        }
      } finally {
        await dir.close();
      }
      return { root: root.name, path: segs.join('/'), created };
    },
  });
}

interface TwoPathArgs {
  root?: string;
  path: string;
  to_root?: string;
  to_path: string;
  overwrite?: boolean;
  recursive?: boolean;
}

const twoPathProps = {
  ...pathProps,
  to_root: Type.Optional(RootArg),
  to_path: Type.String({ maxLength: 4096, description: 'Destination, relative to to_root (default: root) or absolute inside a shared folder.' }),
  overwrite: Type.Optional(Type.Boolean({ description: 'Replace an existing destination file (never a folder).' })),
};

function destArg(a: TwoPathArgs): PathArg {
  const relative = !a.to_path.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(a.to_path);
  return { root: a.to_root ?? (relative ? a.root : undefined), path: a.to_path };
}

/** Resolves source and destination of a move or copy and checks the combination. */
async function resolvePair(env: FilesEnv, a: TwoPathArgs, sourceNeed: 'read' | 'write'): Promise<{ src: Resolved; dst: Resolved }> {
  const src = await resolvePath(env, a, { need: sourceNeed, mustExist: true });
  if (src.rel === '') deny('root_itself', 'The shared folder itself cannot be moved or copied.');
  const dst = await resolvePath(env, destArg(a), { need: 'write', mustExist: false });
  if (dst.rel === '') deny('root_itself', 'The shared folder itself cannot be replaced.');
  checkWritableName(path.posix.basename(a.to_path.replace(/\\/g, '/')), env.limits);
  checkWritableName(dst.name, env.limits);
  if (src.stat!.isDirectory() && isInside(dst.real, src.real)) {
    fail('execution_failed', 'A folder cannot be moved or copied into itself.', { details: { reason: 'into_itself' } });
  }
  if (dst.stat) {
    if (dst.real === src.real) fail('execution_failed', 'Source and destination are the same.', { details: { reason: 'same_path' } });
    if (dst.stat.isDirectory() || src.stat!.isDirectory()) fail('execution_failed', 'The destination exists and folders are never replaced.', { details: { reason: 'exists' } });
    if (!a.overwrite) alreadyExists();
  }
  return { src, dst };
}

async function describePair(env: FilesEnv, verb: 'move' | 'copy', a: TwoPathArgs): Promise<Message> {
  try {
    const { src, dst } = await resolvePair(env, a, verb === 'move' ? 'write' : 'read');
    if (src.stat!.isDirectory()) {
      const n = await countEntries(src.real, env.limits.maxWalkEntries);
      return msg(`files.${verb}.folder`, { folder: folderMsg(src), count: countMsg(n, env.limits.maxWalkEntries), to: whereMsg(dst) });
    }
    const params = { target: whereMsg(src), size: sizeMsg(src.stat!.size), to: whereMsg(dst) };
    return dst.stat ? msg(`files.${verb}.file_replacing`, { ...params, old: sizeMsg(dst.stat.size) }) : msg(`files.${verb}.file`, params);
  } catch {
    return msg(`files.${verb}.unresolved`, { path: a.path, to: a.to_path });
  }
}

const TwoPathOutput = schema({
  root: Type.String(),
  path: Type.String(),
  to_root: Type.String(),
  to_path: Type.String(),
  type: Type.String(),
  entries: Type.Integer({ minimum: 0 }),
  skipped: Type.Integer({ minimum: 0 }),
}, ['root', 'path', 'to_root', 'to_path', 'type', 'entries', 'skipped']);

/** files.move */
export function moveFn(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.move',
      name: 'Move or rename',
      description: 'Moves or renames a file or folder within and between folders the user has shared for writing. Never replaces a folder; replaces a file only with overwrite: true.',
      permission_level: 'high',
      risk: { read_only: false, destructive: true, idempotent: false, physical: false },
      examples: ['Rename draft.docx to final.docx in Documents', 'Move scan.pdf from Downloads to Documents/Invoices'],
      input_schema: schema(twoPathProps, ['path', 'to_path']),
      output_schema: TwoPathOutput,
    }),
    async resources(a) {
      const rs = await resourcesFor(env, 'write', a, destArg(a));
      await knownBefore(() => resolvePair(env, a, 'write'));
      return rs;
    },
    describe: (a) => describePair(env, 'move', a),
    async run(a, ctx) {
      const { src, dst } = await resolvePair(env, a, 'write');
      const isDir = src.stat!.isDirectory();
      const entries = isDir ? await countEntries(src.real, env.limits.maxWalkEntries, ctx.signal) : 1;
      await withDir(src.parentReal, src.rootReal, (sd) =>
        withDir(dst.parentReal, dst.rootReal, async (dd) => {
          ctx.signal.throwIfAborted();
          await sd.recheck();
          await dd.recheck();
          ctx.commit();
          try {
            // A file to a free name: claimed atomically (link, then unlink), so nothing is replaced by surprise.
            if (!dst.stat && !isDir) {
              if ((await linkNoClobber(sd.child(src.name), dd.child(dst.name))) === 'linked') await fs.promises.unlink(sd.child(src.name));
              return;
            }
            if (!dst.stat && (await fs.promises.lstat(dd.child(dst.name)).then(() => true, () => false))) alreadyExists();
            await fs.promises.rename(sd.child(src.name), dd.child(dst.name));
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code === 'EXDEV') {
              fail('execution_failed', 'The two folders are on different drives; copy and then delete instead.', { details: { reason: 'cross_device' } });
            }
            throw e;
          }
        }),
      );
      return { root: src.root.name, path: src.rel, to_root: dst.root.name, to_path: dst.rel, type: isDir ? 'directory' : 'file', entries, skipped: 0 };
    },
  });
}

/** Copies the verified folder `from` into the fresh folder `to`, skipping what must not be copied. */
async function copyTree(env: FilesEnv, from: VerifiedDir, to: VerifiedDir, ctx: CallContext, counts: { entries: number; skipped: number }): Promise<void> {
  const entries = await fs.promises.readdir(from.self(), { withFileTypes: true });
  for (const e of entries) {
    ctx.signal.throwIfAborted();
    if (++counts.entries > env.limits.maxWalkEntries) {
      fail('execution_failed', 'The folder has more entries than the configured limit.', { details: { reason: 'too_many_entries', limit: env.limits.maxWalkEntries } });
    }
    const hidden = !env.limits.allowHidden && isHiddenName(e.name);
    if (hidden || (!e.isFile() && !e.isDirectory())) {
      counts.skipped++;
      continue;
    }
    if (e.isDirectory()) {
      await fs.promises.mkdir(to.child(e.name), { mode: 0o755 });
      const sub = await from.openChild(e.name).catch(() => undefined);
      if (!sub) {
        counts.skipped++;
        continue;
      }
      try {
        const subTo = await to.openChild(e.name);
        try {
          await copyTree(env, sub, subTo, ctx, counts);
        } finally {
          await subTo.close();
        }
      } finally {
        await sub.close();
      }
      continue;
    }
    const denied = isDeniedName(e.name, env.limits);
    const opened = denied ? undefined : await openFileForRead(from.child(e.name), from.rootReal).catch(() => undefined);
    if (!opened || (opened.stat.nlink > 1 && !env.limits.allowHardlinks)) {
      await opened?.fh.close();
      counts.skipped++;
      continue;
    }
    try {
      checkWriteSize(env, opened.stat.size, 'A file in the folder is larger than the configured write limit; nothing was copied.', { name: e.name });
      // Like every file this handler creates: 0644, never executable, whatever the source's mode.
      const out = await fs.promises.open(to.child(e.name), 'wx', 0o644);
      try {
        await copyHandle(opened.fh, out, { signal: ctx.signal });
        await out.sync();
      } finally {
        await out.close();
      }
    } finally {
      await opened.fh.close();
    }
  }
}

/** files.copy */
export function copyFn(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.copy',
      name: 'Copy a file or folder',
      description: 'Copies a file, or a folder with recursive: true, within and between shared folders (the destination must be shared for writing). The copy appears complete or not at all. Links, hidden files, denied file types and files with several hard links are skipped and counted.',
      permission_level: 'high',
      risk: { read_only: false, destructive: true, idempotent: false, physical: false },
      examples: ['Copy report.pdf from Documents to Backup'],
      input_schema: schema({ ...twoPathProps, recursive: Type.Optional(Type.Boolean()) }, ['path', 'to_path']),
      output_schema: TwoPathOutput,
      timeout_ms_default: 120_000,
      timeout_ms_max: 3_600_000,
    }),
    async resources(a) {
      const rs = [...(await resourcesFor(env, 'read', a)), ...(await resourcesFor(env, 'write', destArg(a)))];
      await knownBefore(async () => {
        const { src } = await resolvePair(env, a, 'read');
        if (src.stat!.isDirectory() && !a.recursive) copyNeedsRecursive();
      });
      return rs;
    },
    describe: (a) => describePair(env, 'copy', a),
    async run(a, ctx) {
      const { src, dst } = await resolvePair(env, a, 'read');
      const out = { root: src.root.name, path: src.rel, to_root: dst.root.name, to_path: dst.rel };
      if (!src.stat!.isDirectory()) {
        const opened = await openFileForRead(src.real, src.rootReal);
        try {
          checkHardlinks(env, opened.stat);
          checkWriteSize(env, opened.stat.size, 'The file is larger than the configured write limit.');
          const existing = dst.stat ? await openFileForRead(dst.real, dst.rootReal) : undefined;
          try {
            await withDir(dst.parentReal, dst.rootReal, (dir) =>
              atomicWrite({ dir, name: dst.name, mode: dst.stat ? 'overwrite' : 'create', ctx, existing, fill: (fh, off) => copyHandle(opened.fh, fh, { dstStart: off, signal: ctx.signal }) }),
            );
          } finally {
            await existing?.fh.close();
          }
        } finally {
          await opened.fh.close();
        }
        return { ...out, type: 'file', entries: 1, skipped: 0 };
      }
      if (!a.recursive) copyNeedsRecursive();
      const counts = { entries: 0, skipped: 0 };
      await withDir(dst.parentReal, dst.rootReal, async (dd) => {
        const tmpName = `.aios-${randomBytes(9).toString('hex')}.tmp`;
        await fs.promises.mkdir(dd.child(tmpName), { mode: 0o700 });
        let done = false;
        try {
          const to = await dd.openChild(tmpName);
          const from = await VerifiedDir.open(src.real, src.rootReal);
          try {
            await copyTree(env, from, to, ctx, counts);
          } finally {
            await from.close();
            await to.close();
          }
          // Made 0700 while it fills (nobody sees a half copy); the finished folder is 0755 like its subfolders.
          await fs.promises.chmod(dd.child(tmpName), 0o755);
          ctx.signal.throwIfAborted();
          await dd.recheck();
          if (await fs.promises.lstat(dd.child(dst.name)).then(() => true, () => false)) alreadyExists();
          ctx.commit();
          await fs.promises.rename(dd.child(tmpName), dd.child(dst.name));
          done = true;
        } finally {
          if (!done) await fs.promises.rm(dd.child(tmpName), { recursive: true, force: true }).catch(() => {});
        }
      });
      return { ...out, type: 'directory', entries: counts.entries - counts.skipped, skipped: counts.skipped };
    },
  });
}

/** A folder copy without `recursive`. */
function copyNeedsRecursive(): never {
  fail('execution_failed', 'The source is a folder; set recursive to copy it.', { details: { reason: 'is_folder' } });
}

/** Refuses a copy of `size` bytes over `max_write_bytes`. */
function checkWriteSize(env: FilesEnv, size: number, message: string, details: Record<string, unknown> = {}): void {
  if (size > env.limits.maxWriteBytes) fail('payload_too_large', message, { details: { ...details, size, limit: env.limits.maxWriteBytes } });
}
