/**
 * The tray's own sentences (menu, tooltip, notices). They live in the window's catalogues
 * (electron/renderer/en.json, zh-CN.json, keys `ui.tray.*`) so that the whole shell has one place per
 * language; the main process reads them from disk with the core's catalogue reader.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Catalogue, readCatalogueDir, RENDERER_DIR as BUILT_PAGES, type Locale } from '../src/shell.js';

/** Renders a tray string: `ui.tray.<key>` with `{param}`s filled. */
export type TrayText = (key: string, params?: Readonly<Record<string, string | number>>) => string;

/** The catalogues: electron/renderer/ beside this file in a checkout, else the built pages' copies (dist/renderer/). */
const SOURCE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'renderer');
const RENDERER_DIR = existsSync(join(SOURCE_DIR, 'en.json')) ? SOURCE_DIR : BUILT_PAGES;

const cache = new Map<string, Catalogue>();

function catalogue(dir: string): Catalogue {
  let c = cache.get(dir);
  if (!c) {
    c = new Catalogue();
    for (const [locale, table] of Object.entries(readCatalogueDir(dir))) c.add('ui', locale as Locale, table);
    cache.set(dir, c);
  }
  return c;
}

/** The tray's strings in `locale` (fallback en, then the key), read from `dir` (default: the window's catalogues). */
export function trayText(locale: Locale, dir: string = RENDERER_DIR): TrayText {
  const c = catalogue(dir);
  return (key, params) => c.render({ key: `ui.tray.${key}`, ...(params ? { params } : {}) }, locale);
}
