#!/usr/bin/env node
// Copies the core's non-TypeScript files that code reads beside itself at run time into the build: the SQL
// migration files (src/**/*.sql, e.g. src/bridge/store/pg-migrations/) to <out>/src/… (default dist/), where
// the compiled module finds them (`new URL('./pg-migrations/', import.meta.url)`). tsc copies only the JSON
// that code imports; these are read from disk.
// Run by `npm run build` and scripts/build-electron.mjs. Usage: node scripts/copy-assets.mjs [--out <dir>]
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The files copied, by name. */
const ASSET = /\.sql$/;

/** Copies every asset under src/ to the same path under `out`; returns their paths relative to the checkout. */
export function copyAssets({ out = join(root, 'dist') } = {}) {
  const copied = [];
  for (const rel of readdirSync(join(root, 'src'), { recursive: true }).map(String)) {
    if (!ASSET.test(rel)) continue;
    const to = join(out, 'src', rel);
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(join(root, 'src', rel), to);
    copied.push(join('src', rel));
  }
  return copied.sort();
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--out');
  copyAssets(i >= 0 ? { out: resolve(process.argv[i + 1]) } : {});
}
