/**
 * The `files` grant kind: the folders the user shares (`grants.files`). An entry names an absolute folder
 * (relative paths in the config file are resolved against its folder), its access and optionally the
 * name runtimes use for it (`alias`, or `name` as older configs spell it; default: the folder's name).
 * A folder under a pseudo file system (/dev, /proc, /sys) is refused, so the agent does not start.
 */
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import { defineGrantKind } from '../../src/sdk/index.js';
import { isPseudoFsPath } from './roots.js';

const Name = Type.String({ minLength: 1, maxLength: 255 });

/** `grants.files`: `{ path, access, alias?, ask? }`. */
export const filesGrants = defineGrantKind({
  kind: 'files',
  entry: Type.Object(
    {
      path: Type.String({ minLength: 1 }),
      access: Type.Union([Type.Literal('read'), Type.Literal('read_write')]),
      alias: Type.Optional(Name),
      name: Type.Optional(Name),
      ask: Type.Optional(Type.Literal('always')),
    },
    { additionalProperties: false },
  ),
  normalize(e, ctx) {
    const p = ctx.resolvePath(e.path);
    if (!path.isAbsolute(p)) throw new Error('path must be an absolute path');
    const abs = path.resolve(p);
    if (isPseudoFsPath(abs)) throw new Error(`${abs} is a device or kernel folder, which cannot be shared`);
    if (e.alias !== undefined && e.name !== undefined && e.alias !== e.name) throw new Error('give alias or name, not both');
    return { id: abs, alias: e.alias ?? e.name ?? (path.basename(abs) || abs), access: e.access, ask: e.ask };
  },
  // A folder grant covers everything inside it.
  covers: (grantId, requestedId) => grantId === '*' || requestedId === grantId || requestedId.startsWith(grantId.endsWith(path.sep) ? grantId : grantId + path.sep),
});
