/**
 * What every function of the files handler shares: its environment, the JSON Schema pieces for path
 * arguments, the descriptor defaults, and the lock key for a path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Type, type TObject, type TProperties, type TSchema } from '@sinclair/typebox';
import { WireError, type CallResource, type DescriptorInput, type Logger } from '../../src/sdk/index.js';
import type { PathArg, PathContext, Resolved } from './paths.js';
import type { Staging } from './staging.js';
import { grantedRoot, resolveAhead, rootOf } from './paths.js';

/** The handler's state, built once in `create()`. */
export interface FilesEnv extends PathContext {
  readonly staging: Staging;
  readonly log: Logger;
}

/** `root` argument: the name of a shared folder. */
export const RootArg = Type.String({ minLength: 1, maxLength: 255, description: 'Name of a shared folder (see grants.files). Optional when `path` is absolute.' });
/** `path` argument: relative to the root, or absolute inside it. */
export const PathStr = Type.String({ maxLength: 4096, description: 'Path relative to the shared folder (a/b.txt), or an absolute path inside it.' });

/** Properties for one path argument. */
export const pathProps = { root: Type.Optional(RootArg), path: PathStr };

/**
 * A closed object schema. `required`, when given, must name exactly the properties not wrapped in
 * Type.Optional (checked here), so the types TypeScript infers and the schema the agent validates agree.
 */
export function schema<P extends TProperties>(props: P, required?: readonly string[]): TObject<P> {
  const s = Type.Object(props, { additionalProperties: false });
  const computed = [...(s.required ?? [])].sort();
  if (required && JSON.stringify([...required].sort()) !== JSON.stringify(computed)) {
    throw new Error(`schema(): required ${JSON.stringify(required)} does not match the non-optional properties ${JSON.stringify(computed)}`);
  }
  return s;
}

/** The descriptor fields a function must state; the rest default to this handler's values. */
type DescriptorSpec<IS extends TSchema, OS extends TSchema> = Pick<DescriptorInput, 'id' | 'name' | 'description' | 'permission_level' | 'risk'> &
  Partial<Omit<DescriptorInput, 'input_schema' | 'output_schema'>> & { input_schema: IS; output_schema: OS };

/** Descriptor defaults for this handler (the schemas keep their TypeBox types, for defineFunction). */
export function descriptor<IS extends TSchema, OS extends TSchema>(d: DescriptorSpec<IS, OS>): Omit<DescriptorInput, 'input_schema' | 'output_schema'> & { input_schema: IS; output_schema: OS } {
  return {
    version: '1.0.0',
    capability_type: 'file',
    access: 'restricted',
    confirmation: 'policy',
    timeout_ms_default: 30_000,
    timeout_ms_max: 120_000,
    cancellable: true,
    locks: [],
    ...d,
  };
}

const FOLD_CASE = process.platform === 'win32' || process.platform === 'darwin';

/**
 * The lock string for a path: `file:<real path>` (the parent's real path + name for a new file). Must be
 * synchronous, so it uses the sync fs calls; when the path cannot be resolved the call will be refused in
 * `run()` anyway and a lexical key is enough.
 */
export function lockFor(env: FilesEnv, arg: PathArg): string {
  let key: string;
  try {
    const root = rootOf(env.roots, arg);
    if (!root) throw new Error('no root');
    const rootReal = fs.realpathSync.native(root.path);
    const rel = path.isAbsolute(arg.path) ? path.relative(root.path, path.resolve(arg.path)) : arg.path;
    const target = path.join(rootReal, rel);
    try {
      key = fs.realpathSync.native(target);
    } catch {
      key = path.join(fs.realpathSync.native(path.dirname(target)), path.basename(target));
    }
  } catch {
    key = `${arg.root ?? ''}:${arg.path}`;
  }
  return `file:${FOLD_CASE ? key.toLowerCase() : key}`;
}

/**
 * The resources of a call on these paths (before consent): the shared folder of each (`files:<folder>`,
 * labelled with its name: the scope of a remembered decision), refused with `permission_denied` when a
 * path is outside every shared folder, the folder is read-only for a write, or the path as far as it
 * exists leads out of the folder (`resolveAhead`: links are resolved here, so such an escape is
 * `rejected` like any other). A write locks the file's real path (`file:<real path>`); a read takes no lock.
 */
export async function resourcesFor(env: FilesEnv, need: 'read' | 'write', ...args: PathArg[]): Promise<CallResource[]> {
  const out: CallResource[] = [];
  for (const arg of args) out.push((await resourceAhead(env, need, arg)).resource);
  return out;
}

/**
 * One path's resource (as `resourcesFor`) and its resolution as far as it exists, for the checks a
 * function can make before anyone is asked (a create over an existing file, a folder where a file is
 * needed: `knownBefore`).
 */
export async function resourceAhead(env: FilesEnv, need: 'read' | 'write', arg: PathArg): Promise<{ resource: CallResource; resolved: Resolved | undefined }> {
  const root = await grantedRoot(env, arg, need);
  const resolved = await resolveAhead(env, arg, need);
  return { resource: { kind: 'files', id: root.path, label: root.name, access: need, lock: need === 'write' ? lockFor(env, arg) : false }, resolved };
}

/**
 * Runs `check` (the same test `run()` makes) before consent, keeping only the failures that the disk
 * already decides: `execution_failed` with reason `exists`, `is_folder`, `not_folder`, `into_itself`,
 * `same_path`, and any `permission_denied`. A call bound to fail so ends before a prompt
 * (`failed/execution_failed`, `side_effects: none`). What may still change (a missing file that may
 * appear) is left to `run()`, which checks everything again.
 */
export async function knownBefore(check: () => unknown): Promise<void> {
  try {
    await check();
  } catch (e) {
    if (e instanceof WireError && (e.type === 'permission_denied' || (e.type === 'execution_failed' && DECIDED.has(String(e.details?.['reason']))))) throw e;
  }
}

const DECIDED = new Set(['exists', 'is_folder', 'not_folder', 'into_itself', 'same_path']);

/** Entry types reported in outputs. */
export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

/** The type of a (l)stat result. */
export function entryType(st: fs.Stats | fs.Dirent): EntryType {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'directory';
  if (st.isFile()) return 'file';
  return 'other';
}
