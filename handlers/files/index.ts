/**
 * The files handler: read and write what the user shared (`grants.files`), and nothing else.
 * See docs/handlers/files.md for the grant model, the limits and the error cases.
 */
import path from 'node:path';
import { defineHandler, type CallContext, type FunctionDefinition, type HandlerEnv } from '../../src/sdk/index.js';
import { listDir, searchFn, statFn } from './browse.js';
import type { FilesEnv } from './common.js';
import { deleteFn } from './delete.js';
import { parseLimits } from './limits.js';
import { copyFn, mkdirFn, moveFn } from './manage.js';
import { readBytes, readText } from './read.js';
import { fromOsError } from './paths.js';
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


export default defineHandler({
  name: 'files',
  async create(env) {
    return filesFunctions(await filesEnv(env));
  },
});
