/**
 * files.delete: always confirmed (critical). Moves to the OS trash where one exists (the `trash` package,
 * loaded on first use), otherwise deletes. A folder with contents goes only with `recursive: true`, and
 * the prompt says how many entries it holds.
 */
import fs from 'node:fs';
import { Type } from '@sinclair/typebox';
import { defineFunction, fail, WireError } from '../../src/sdk/index.js';
import { type FilesEnv, descriptor, pathProps, resourcesFor, schema } from './common.js';
import { askedMsg, countEntries, countMsg, folderMsg, msg, sizeMsg, whereMsg } from './describe.js';
import { withDir } from './handles.js';
import { deny, resolvePath, type Resolved } from './paths.js';

type TrashFn = (typeof import('trash'))['default'];
let trashModule: Promise<TrashFn | null> | undefined;

/** The trash function, or null where there is no OS trash (or the package cannot load). */
function loadTrash(): Promise<TrashFn | null> {
  trashModule ??= ['linux', 'darwin', 'win32'].includes(process.platform)
    ? import('trash').then((m) => m.default, () => null)
    : Promise.resolve(null);
  return trashModule;
}

interface DeleteArgs {
  root?: string;
  path: string;
  recursive?: boolean;
}

async function target(env: FilesEnv, a: DeleteArgs): Promise<Resolved> {
  const r = await resolvePath(env, a, { need: 'write', mustExist: true });
  if (r.rel === '') deny('root_itself', 'The shared folder itself cannot be deleted.');
  return r;
}

/** files.delete */
export function deleteFn(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.delete',
      name: 'Delete a file or folder',
      description: 'Deletes a file or folder inside a folder the user has shared for writing, moving it to the trash where the system has one. A folder that is not empty is deleted only with recursive: true. Always asks the user.',
      permission_level: 'critical',
      confirmation: 'always',
      risk: { read_only: false, destructive: true, idempotent: false, physical: false },
      examples: ['Delete old-draft.docx from Documents'],
      input_schema: schema({ ...pathProps, recursive: Type.Optional(Type.Boolean()) }, ['path']),
      output_schema: schema({
        root: Type.String(),
        path: Type.String(),
        type: Type.String(),
        entries: Type.Integer({ minimum: 0 }),
        trashed: Type.Boolean(),
      }, ['root', 'path', 'type', 'entries', 'trashed']),
      timeout_ms_default: 60_000,
      timeout_ms_max: 600_000,
    }),
    async resources(a) {
      const rs = await resourcesFor(env, 'write', a);
      // A call that cannot succeed is refused before anyone is asked: a folder with contents needs recursive.
      let r: Resolved | undefined;
      try {
        r = await target(env, a);
      } catch (e) {
        if (e instanceof WireError && e.type === 'permission_denied') throw e;
        return rs; // not there (yet): run() says so
      }
      if (r.stat!.isDirectory() && !a.recursive && (await countEntries(r.real, 1)) > 0) {
        fail('invalid_arguments', 'The folder is not empty; set recursive to delete it with its contents.', { details: { reason: 'not_empty' } });
      }
      return rs;
    },
    async describe(a) {
      const how = env.limits.useTrash && (await loadTrash()) ? 'files.trash' : 'files.delete';
      try {
        const r = await target(env, a);
        if (r.stat!.isDirectory()) {
          const n = await countEntries(r.real, env.limits.maxWalkEntries);
          if (n > 0 && !a.recursive) return msg(`${how}.folder_not_empty`, { folder: folderMsg(r) });
          return msg(`${how}.folder`, { folder: folderMsg(r), count: countMsg(n, env.limits.maxWalkEntries) });
        }
        return msg(`${how}.file`, { target: whereMsg(r), size: sizeMsg(r.stat!.size) });
      } catch {
        return msg(`${how}.unresolved`, { target: askedMsg(a) });
      }
    },
    async run(a, ctx) {
      const r = await target(env, a);
      const isDir = r.stat!.isDirectory();
      let entries = 0;
      if (isDir) {
        entries = await countEntries(r.real, env.limits.maxWalkEntries, ctx.signal);
        if (entries > 0 && !a.recursive) fail('execution_failed', 'The folder is not empty; set recursive to delete it with its contents.', { details: { reason: 'not_empty', entries } });
        if (entries > env.limits.maxWalkEntries) fail('execution_failed', 'The folder has more entries than the configured limit.', { details: { reason: 'too_many_entries', limit: env.limits.maxWalkEntries } });
      }
      const trash = env.limits.useTrash ? await loadTrash() : null;
      await withDir(r.parentReal, r.rootReal, async (dir) => {
        ctx.signal.throwIfAborted();
        await dir.recheck();
        const again = await fs.promises.lstat(dir.child(r.name));
        if (again.dev !== r.stat!.dev || again.ino !== r.stat!.ino) deny('changed_during_open', 'The file changed before it could be deleted.');
        ctx.commit();
        if (trash) {
          try {
            await trash([r.real], { glob: false });
          } catch {
            fail('execution_failed', 'The item could not be moved to the trash.', { details: { reason: 'trash_failed' }, sideEffects: 'possible' });
          }
        } else if (isDir) {
          await fs.promises.rm(dir.child(r.name), { recursive: true });
        } else {
          await fs.promises.unlink(dir.child(r.name));
        }
      });
      return { root: r.root.name, path: r.rel, type: isDir ? 'directory' : 'file', entries: isDir ? entries : 1, trashed: trash !== null };
    },
  });
}
