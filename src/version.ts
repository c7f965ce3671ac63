/**
 * The app's version and install layout, found from this module's location so it works both from
 * `src/` (tsx) and from the compiled `dist/src/`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The folder of package.json. */
export const PROJECT_ROOT = (() => {
  let d = here;
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(d, 'package.json'))) return d;
    d = dirname(d);
  }
  return resolve(here, '..');
})();

/** AIOS Device's version (package.json). */
export const APP_VERSION: string = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The built-in handlers folder next to this build (`handlers/` under tsx, `dist/handlers/` compiled). */
export const BUILTIN_HANDLERS_DIR = resolve(here, '..', 'handlers');

/**
 * The window's pages as built (scripts/build-renderer.mjs): `dist/renderer/` beside the compiled
 * `dist/src/`; under tsx, the checkout's `dist/renderer/`, which src/app/renderer-bundle.ts keeps built.
 */
export const RENDERER_DIR = import.meta.url.endsWith('.ts') ? join(PROJECT_ROOT, 'dist', 'renderer') : resolve(here, '..', 'renderer');

/** The extension of this build's modules. */
export const MODULE_EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
