#!/usr/bin/env node
// Builds the JavaScript adapters' host (resources/adapter-host/host.mjs) into one self-contained file,
// <out>/host.mjs (default dist/adapter-host/), with the MCP SDK it imports bundled in: the packaged tray
// app ships it unpacked (build/electron-builder.yml `extraResources`, <resources>/adapter-host/host.mjs),
// where a Node.js outside the app can run it inside the sandbox: the app's own binary cannot (its
// `runAsNode` fuse is off) and the packages inside app.asar cannot be read by any other program.
// From a checkout (the CLI, the tests) the host runs as it is, beside node_modules.
// Run by `npm run build`. Usage: node scripts/build-adapter-host.mjs [--out <dir>]
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The host's source. */
export const ADAPTER_HOST_SOURCE = join(root, 'resources', 'adapter-host', 'host.mjs');

/** Bundles the host into `<out>/host.mjs`; resolves to that path. */
export async function buildAdapterHost(out = join(root, 'dist', 'adapter-host')) {
  mkdirSync(out, { recursive: true });
  const file = join(out, 'host.mjs');
  await build({
    entryPoints: [ADAPTER_HOST_SOURCE],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Some of the SDK's dependencies are CommonJS and call require(): give the ES module one.
    banner: { js: "import { createRequire as __aiosCreateRequire } from 'node:module'; const require = __aiosCreateRequire(import.meta.url);" },
    logLevel: 'warning',
    legalComments: 'eof',
  });
  return file;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--out');
  const file = await buildAdapterHost(at > 0 ? resolve(process.argv[at + 1]) : undefined);
  process.stdout.write(`built the adapter host into ${file}\n`);
}
