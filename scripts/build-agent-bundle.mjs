#!/usr/bin/env node
// Bundles the compiled CLI (dist/src/cli/main.js) and the built-in handlers (dist/handlers/<name>/index.js)
// into <out>/ (default dist/agent/): one entry, main.js, and chunks for what the CLI and the agent import
// lazily (the bridge, the trial, the handlers), with the libraries they use tree-shaken in. Native,
// optional and heavy libraries stay outside (EXTERNAL): they load from node_modules on first use, as
// before. Measured for issue 32 (the agent's RSS at rest): docs/performance.md, "A bundled agent".
//
// Two things the separate modules did by themselves, the bundle has to be told:
// - `import.meta.url`: each module finds its assets (dist/validators/, dist/handlers/, package.json, the
//   audit worker) from its own location; in a chunk it would be the chunk's. Every `import.meta.url` of
//   a module under dist/ is rewritten to that module's own URL, computed from the chunk's, so lookups
//   stay as they were (every output is written straight into <out>/, so one relative path fits all).
// - the built-in handlers are imported by a path computed at run time (src/agent/handlers-loader.ts):
//   the loader's dynamic import of dist/handlers/<name>/index.js is given a table of static imports,
//   so a handler and the agent share one copy of src/sdk/ and the rest.
//
// Run by `npm run build`. Usage: node scripts/build-agent-bundle.mjs [--dist <compiled build>] [--out <dir>] [--metafile <file>]
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Packages left outside the bundle: native, optional, loaded on first use, or large and lazy. */
export const EXTERNAL = [
  'better-sqlite3', 'serialport', '@serialport/*', '@abandonware/*', 'pdfkit', 'node-notifier', '@napi-rs/keyring',
  'qrcode', 'qrcode-terminal', 'string-width', 'trash', '@modelcontextprotocol/*', 'pg', 'tsx', 'tsx/*', 'electron',
];

/**
 * Bundles a compiled build (`dist`, default the checkout's dist/) into `out` (default <dist>/agent/); resolves
 * to the entry's path and esbuild's metafile (which output holds which module). `entries` (name → a
 * compiled file) replaces the CLI as the entry (a benchmark bundles its agent child this way).
 */
export async function buildAgentBundle({ dist = join(root, 'dist'), out = join(dist, 'agent'), entries = { main: join(dist, 'src', 'cli', 'entry.js') } } = {}) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const handlersDir = join(dist, 'handlers');
  const handlers = readdirSync(handlersDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(handlersDir, e.name, 'index.js')))
    .map((e) => e.name)
    .sort();
  const loader = join(dist, 'src', 'agent', 'handlers-loader.js');
  const urlOf = (file) => JSON.stringify(relative(out, file).split(sep).join('/'));
  const plugin = {
    name: 'aios-agent',
    setup(b) {
      b.onLoad({ filter: /\.js$/ }, (args) => {
        if (!args.path.startsWith(dist + sep)) return undefined;
        let text = readFileSync(args.path, 'utf8');
        if (args.path === loader) {
          const table = handlers.map((h) => `${JSON.stringify(h)}: () => import(${JSON.stringify('../../handlers/' + h + '/index.js')})`).join(', ');
          const call = "await import(pathToFileURL(join(dir, name, 'index' + MODULE_EXT)).href)";
          if (!text.includes(call)) throw new Error(`${loader}: the handlers' import changed; update scripts/build-agent-bundle.mjs`);
          text = text.replace(call, `await (dir === BUILTIN_HANDLERS_DIR && Object.hasOwn(__aiosBundledHandlers, name) ? __aiosBundledHandlers[name]() : import(pathToFileURL(join(dir, name, 'index' + MODULE_EXT)).href))`);
          text += `\nconst __aiosBundledHandlers = { ${table} };\n`;
        }
        if (text.includes('import.meta.url')) text = text.replaceAll('import.meta.url', `new URL(${urlOf(args.path)}, import.meta.url).href`);
        return { contents: text, loader: 'js', resolveDir: dirname(args.path) };
      });
    },
  };
  const result = await build({
    entryPoints: entries,
    outdir: out,
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: EXTERNAL,
    plugins: [plugin],
    sourcemap: true,
    metafile: true,
    // Some bundled libraries are CommonJS and call require(): give the ES modules one.
    banner: { js: "import { createRequire as __aiosCreateRequire } from 'node:module'; const require = __aiosCreateRequire(import.meta.url);" },
    logLevel: 'warning',
    legalComments: 'none',
  });
  refuseTwoByteSources(out);
  return { file: join(out, Object.keys(entries)[0] + '.js'), metafile: result.metafile };
}

/**
 * V8 keeps a module's source text as long as the module lives, one byte a character when every character is
 * at most U+00FF and two bytes otherwise: one Chinese character in a regular expression (esbuild escapes
 * those in strings, not in regular expression literals) doubled main.js's 0.7 MB in the agent's heap at rest.
 * So the build fails and names the place; write such characters as `\uXXXX` in the source.
 */
export function refuseTwoByteSources(out) {
  const found = [];
  for (const name of readdirSync(out)) {
    if (!name.endsWith('.js')) continue;
    const lines = readFileSync(join(out, name), 'utf8').split('\n');
    lines.forEach((line, i) => {
      const at = line.search(/[\u0100-\u{10ffff}]/u);
      if (at >= 0) found.push(`${name}:${i + 1}: ${JSON.stringify(line.slice(Math.max(0, at - 30), at + 30))}`);
    });
  }
  if (found.length) {
    throw new Error(`characters above U+00FF in the agent's bundle (V8 would keep these files' source as two-byte text, twice its size; write them as \\uXXXX in the source, see the sources map for the module):\n  ${found.join('\n  ')}`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? resolve(process.argv[at + 1]) : undefined;
  };
  const dist = arg('--dist');
  const out = arg('--out');
  const { file, metafile } = await buildAgentBundle({ ...(dist ? { dist } : {}), ...(out ? { out } : {}) });
  const meta = arg('--metafile');
  if (meta) writeFileSync(meta, JSON.stringify(metafile));
  process.stdout.write(`built the agent's bundle into ${file}\n`);
}
