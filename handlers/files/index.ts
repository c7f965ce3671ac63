/**
 * The files handler: read and write what the user shared (`grants.files`), and nothing else.
 * See docs/handlers/files.md for the grant model, the limits and the error cases.
 */
import path from 'node:path';
import { defineHandler, mapErrors, type AnyFunctionDefinition, type HandlerEnv } from '../../src/sdk/index.js';
import { listDir, searchFn, statFn } from './browse.js';
import type { FilesEnv } from './common.js';
import { deleteFn } from './delete.js';
import { parseLimits } from './limits.js';
import { copyFn, mkdirFn, moveFn } from './manage.js';
import { readBytes, readText } from './read.js';
import { foundWhileRunning, fromOsError } from './paths.js';
import { filesGrants } from './grants.js';
import { rootsOf, type Root } from './roots.js';
import { Staging } from './staging.js';
import { writeBytes, writeText } from './write.js';

/** Builds the handler state from the host's environment (throws on bad grants or options). */
export async function filesEnv(env: HandlerEnv): Promise<FilesEnv> {
  const staging = new Staging(path.join(env.dataDir, 'files-staging'));
  await staging.init();
  // The roots follow the live grants (a folder added or removed through the control API counts at once).
  let roots: Root[] = rootsOf(env.grants.list('files'));
  env.grants.on('change', () => {
    roots = rootsOf(env.grants.list('files'));
  });
  return {
    get roots() {
      return roots;
    },
    limits: parseLimits(env.options),
    staging,
    log: env.log.child({ handler: 'files' }),
  };
}

/** Every function of the handler, in id order. */
export function filesFunctions(fe: FilesEnv): AnyFunctionDefinition[] {
  const defs: AnyFunctionDefinition[] = [copyFn(fe), deleteFn(fe), listDir(fe), mkdirFn(fe), moveFn(fe), readBytes(fe), readText(fe), searchFn(fe), statFn(fe), writeBytes(fe), writeText(fe)];
  // What the OS refuses (EACCES, ENOSPC, …) becomes a typed wire error, in every function; an escape
  // that resources() did not see (the path changed after it) says it was found while running.
  return defs.map((d) => mapErrors(d, (e) => foundWhileRunning(fromOsError(e))));
}


export default defineHandler({
  name: 'files',
  title: 'Shared files',
  description: 'List, search, read and write files inside folders the user has shared, with path safety, size limits and blobs for large files.',
  about: 'Built-in adapter: read and write what the user has shared (grants.files), and nothing else.\ndocs/handlers/files.md explains the grant model and the limits.',
  grantKinds: [filesGrants],
  async create(env) {
    return filesFunctions(await filesEnv(env));
  },
});
