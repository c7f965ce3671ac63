#!/usr/bin/env node
// Builds the tray shell into <out> (default dist/): the core (tsc -p tsconfig.json, and its SQL files by
// scripts/copy-assets.mjs), the shell
// (tsc -p electron/tsconfig.json), the preload bundled into one CommonJS file (a sandboxed preload can
// neither load ES modules nor require sibling files), and the window's pages built into <out>/renderer
// (scripts/build-renderer.mjs: the local endpoint's /ui/ and the tray's aios-ui:// scheme serve them), and
// the precompiled validators into <out>/validators (scripts/build-validators.mjs).
// Usage: node scripts/build-electron.mjs [--out <dir>]
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { buildRenderer } from './build-renderer.mjs';
import { buildAdapterHost } from './build-adapter-host.mjs';
import { copyAssets } from './copy-assets.mjs';
import { buildValidators } from './build-validators.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const i = process.argv.indexOf('--out');
const out = resolve(root, i >= 0 ? process.argv[i + 1] : 'dist');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json'), '--outDir', out], { stdio: 'inherit' });
execFileSync(process.execPath, [tsc, '-p', join(root, 'electron', 'tsconfig.json'), '--outDir', out], { stdio: 'inherit' });
// The SQL migration files the core reads beside its modules (tsc copies only imported JSON).
copyAssets({ out });
mkdirSync(join(out, 'electron'), { recursive: true });
await build({
  entryPoints: [join(root, 'electron', 'preload.ts')],
  outfile: join(out, 'electron', 'preload.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  external: ['electron'],
  logLevel: 'warning',
});
await buildRenderer({ out: join(out, 'renderer') });
await buildAdapterHost(join(out, 'adapter-host'));
// The precompiled validators, from the core just compiled into <out>.
await buildValidators(out);
process.stdout.write(`built the tray shell into ${out}; run it with: npx electron ${join(out, 'electron', 'main.js')}\n`);
