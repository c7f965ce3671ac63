#!/usr/bin/env node
// Writes the precompiled validators (issue 32): every JSON Schema the program knows at build time, as
// ajv standalone code, one file per schema in <out>/validators/ (default dist/), where the compiled
// src/protocol/schema-validator.js looks them up, so that the agent validates them without compiling
// them or loading ajv. The list of schemas and the generation are src/kit/precompile.ts, compiled into
// <out> first (tsc). Run by `npm run build` and scripts/build-electron.mjs.
// Usage: node scripts/build-validators.mjs [--out <dir>]
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Generates `<out>/validators/` from the build in `<out>`; resolves to the number of files. */
export async function buildValidators(out = join(root, 'dist')) {
  const kit = await import(pathToFileURL(join(out, 'src', 'kit', 'precompile.js')).href);
  const r = await kit.buildValidators(join(out, 'validators'));
  return r.files.length;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--out');
  await buildValidators(i >= 0 ? resolve(process.argv[i + 1]) : undefined);
}
