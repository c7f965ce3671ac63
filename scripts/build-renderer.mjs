#!/usr/bin/env node
// Builds the window's pages (electron/renderer/: TypeScript modules, HTML, CSS, string catalogues) into
// <out> (default dist/renderer/): app.ts and capture.ts bundled by esbuild into app.js and capture.js (one
// script per page, as the pages' CSP wants: `script-src 'self'`, no inline code), the other files copied.
// The local endpoint serves that folder at /ui/ and the tray's aios-ui:// scheme serves it to the window.
//
// Run by `npm run build` and scripts/build-electron.mjs, and imported by the agent when it runs from a
// source checkout (src/app/renderer-bundle.ts: `npm test` and `tsx src/cli/main.ts` build nothing first),
// which builds only when a source is newer than the last build. Files are written under a temporary name
// and renamed, so an agent serving the folder while another process rebuilds it never reads half a file.
// Usage: node scripts/build-renderer.mjs [--out <dir>]
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The page's sources. */
export const RENDERER_SOURCE_DIR = join(root, 'electron', 'renderer');
/** Where `npm run build` puts the bundle (the agent run from source serves it from there too). */
export const RENDERER_OUT_DIR = join(root, 'dist', 'renderer');
/** The pages' entry modules, one bundle each. */
const ENTRIES = ['app.ts', 'capture.ts'];
/** Files copied as they are (what the pages load besides their script). */
const COPIED = /\.(html|css|json)$/;
/** Written last: its time is the build's (a hidden name, so the /ui/ route never serves it). */
const STAMP = '.built';

/** The part of src/ the pages bundle: the control API's plain modules (its table and typed client). */
const SHARED_SOURCE_DIR = join(root, 'src', 'control');

/** The newest modification time of the sources (and of this script, which says how they are built). */
function newestSource() {
  let newest = statSync(fileURLToPath(import.meta.url)).mtimeMs;
  for (const dir of [RENDERER_SOURCE_DIR, SHARED_SOURCE_DIR]) {
    for (const n of readdirSync(dir, { recursive: true })) {
      const s = statSync(join(dir, String(n)));
      if (s.isFile()) newest = Math.max(newest, s.mtimeMs);
    }
  }
  return newest;
}

/** True when `out` holds a build at least as new as every source. */
export function isFresh(out = RENDERER_OUT_DIR) {
  try {
    return statSync(join(out, STAMP)).mtimeMs >= newestSource();
  } catch {
    return false;
  }
}

/** Writes `data` to `file` through a temporary file and a rename (readers see the old or the new file, whole). */
function writeAtomic(file, data) {
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

/**
 * Builds the pages into `out`. With `ifStale`, does nothing when `out` is already as new as the sources.
 * Returns whether it built.
 */
export async function buildRenderer({ out = RENDERER_OUT_DIR, ifStale = false } = {}) {
  if (ifStale && isFresh(out)) return false;
  const { build, stop } = await import('esbuild');
  // An agent that built its pages keeps running: esbuild's service process is not kept with it.
  const result = await build({
    entryPoints: ENTRIES.map((e) => join(RENDERER_SOURCE_DIR, e)),
    outdir: out,
    bundle: true,
    // One classic script per page (no module loading to allow for on the custom scheme or in the browser).
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    sourcemap: false,
    write: false,
    logLevel: 'warning',
    tsconfig: join(RENDERER_SOURCE_DIR, 'tsconfig.json'),
  }).finally(() => stop());
  mkdirSync(out, { recursive: true });
  for (const f of result.outputFiles) writeAtomic(f.path, f.contents);
  for (const n of readdirSync(RENDERER_SOURCE_DIR)) {
    if (COPIED.test(n) && n !== 'tsconfig.json') writeAtomic(join(out, n), readFileSync(join(RENDERER_SOURCE_DIR, n)));
  }
  writeAtomic(join(out, STAMP), new Date().toISOString() + '\n');
  return true;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--out');
  const out = i >= 0 ? resolve(process.argv[i + 1]) : RENDERER_OUT_DIR;
  await buildRenderer({ out });
  process.stdout.write(`built the window's pages into ${out}\n`);
}
