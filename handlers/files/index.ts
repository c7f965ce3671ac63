/**
 * The files handler: read and write what the user shared (`grants.files`), and nothing else.
 * See docs/handlers/files.md for the grant model, the limits and the error cases.
 */
import path from 'node:path';
import { WireError, defineHandler, type CallContext, type FunctionDefinition, type HandlerEnv } from '../../src/sdk/index.js';
import { listDir, searchFn, statFn } from './browse.js';
import type { FilesEnv } from './common.js';
import { deleteFn } from './delete.js';
import { parseLimits } from './limits.js';
import { copyFn, mkdirFn, moveFn } from './manage.js';
import { readBytes, readText } from './read.js';
import { parseRoots } from './roots.js';
import { Staging } from './staging.js';
import { writeBytes, writeText } from './write.js';

/** Builds the handler state from the host's environment (throws on bad grants or options). */
export async function filesEnv(env: HandlerEnv): Promise<FilesEnv> {
  const staging = new Staging(path.join(env.dataDir, 'files-staging'));
  await staging.init();
  return {
    roots: parseRoots(env.grants.files),
    limits: parseLimits(env.options),
    staging,
    log: env.log.child({ handler: 'files' }),
  };
}

/** Every function of the handler, in id order. */
export function filesFunctions(fe: FilesEnv): FunctionDefinition<never, unknown>[] {
  const defs = [copyFn(fe), deleteFn(fe), listDir(fe), mkdirFn(fe), moveFn(fe), readBytes(fe), readText(fe), searchFn(fe), statFn(fe), writeBytes(fe), writeText(fe)];
  return (defs as unknown as FunctionDefinition<Record<string, unknown>, unknown>[]).map((d) => ({
    ...d,
    async run(a: Record<string, unknown>, ctx: CallContext) {
      try {
        return await d.run(a, ctx);
      } catch (e) {
        throw fromOsError(e);
      }
    },
  })) as unknown as FunctionDefinition<never, unknown>[];
}

/**
 * What the operating system refused, said as a wire error (every function, every step: opening,
 * creating, renaming, deleting). Anything else goes on as it is; the host turns a stray error into a
 * generic `execution_failed` without private detail.
 */
export function fromOsError(e: unknown): unknown {
  if (e instanceof WireError) return e;
  switch ((e as NodeJS.ErrnoException | undefined)?.code) {
    case 'EACCES':
    case 'EPERM':
      return new WireError('permission_denied', 'The operating system refused access to the file or folder.', { details: { reason: 'os_denied' } });
    case 'EROFS':
      return new WireError('permission_denied', 'The file system is read-only.', { details: { reason: 'read_only_fs' } });
    case 'ENOSPC':
    case 'EDQUOT':
      return new WireError('execution_failed', 'The disk is full.', { details: { reason: 'no_space' } });
    case 'ENOENT':
    case 'ENOTDIR':
      return new WireError('execution_failed', 'The file or folder does not exist (it may have just been moved or deleted).', { details: { reason: 'not_found' }, retryable: true });
    case 'EBUSY':
    case 'ETXTBSY':
    case 'EMFILE':
    case 'ENFILE':
      return new WireError('execution_failed', 'The file or folder is busy; try again.', { details: { reason: 'busy' }, retryable: true });
    default:
      return e;
  }
}

export default defineHandler({
  name: 'files',
  async create(env) {
    return filesFunctions(await filesEnv(env));
  },
});
