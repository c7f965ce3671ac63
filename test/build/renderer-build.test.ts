/**
 * The window's pages are TypeScript modules under electron/renderer/, type-checked with the rest and
 * bundled by scripts/build-renderer.mjs into one classic script per page (the same build `npm run build`,
 * scripts/build-electron.mjs and an agent run from source use). Built here into a temporary folder, so
 * the checkout's dist/renderer/, which agents of parallel tests serve, is never touched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SOURCES = join(ROOT, 'electron', 'renderer');
const builder = (await import(join(ROOT, 'scripts', 'build-renderer.mjs'))) as {
  buildRenderer(o: { out?: string; ifStale?: boolean }): Promise<boolean>;
  isFresh(out: string): boolean;
};

test('electron/renderer/ holds no hand-written .js: the pages are TypeScript modules', () => {
  const js = readdirSync(SOURCES, { recursive: true }).map(String).filter((f) => /\.(c|m)?js$/.test(f));
  assert.deepEqual(js, []);
  const modules = readdirSync(SOURCES).filter((f) => f.endsWith('.ts'));
  for (const m of ['app.ts', 'capture.ts', 'control-client.ts', 'transports.ts', 'catalogue.ts', 'prompt.ts', 'activity.ts', 'settings.ts', 'signin.ts']) assert.ok(modules.includes(m), `${m} exists`);
});

test('npm run typecheck covers every page module, with the DOM library and without Node', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.match(pkg.scripts['typecheck'] ?? '', /tsc -p electron\/renderer\/tsconfig\.json --noEmit/);
  assert.match(readFileSync(join(ROOT, 'scripts', 'test.mjs'), 'utf8'), /electron\/renderer\/tsconfig\.json/, 'npm test type-checks the pages too');
  const file = join(SOURCES, 'tsconfig.json');
  const parsed = ts.getParsedCommandLineOfConfigFile(file, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(String(d.messageText)) });
  assert.ok(parsed, 'the pages have a tsconfig');
  assert.deepEqual(parsed.errors, []);
  const checked = new Set(parsed.fileNames.map((f) => resolve(f)));
  for (const f of readdirSync(SOURCES).filter((n) => n.endsWith('.ts'))) assert.ok(checked.has(join(SOURCES, f)), `${f} is type-checked`);
  assert.ok((parsed.options.lib ?? []).some((l) => /dom/i.test(l)), 'the DOM library');
  assert.deepEqual(parsed.options.types, [], 'no @types/node: a page cannot use process or Buffer');
  assert.equal(parsed.options.strict, true);
  assert.equal(parsed.options.noUncheckedIndexedAccess, true);
  // The check is real: it reports the errors of the page's own code (none today), through the same program.
  const program = ts.createProgram(parsed.fileNames, parsed.options);
  const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  assert.deepEqual(errors, []);
  const probe = ts.createProgram([join(SOURCES, 'dom.ts')], parsed.options, { ...ts.createCompilerHost(parsed.options), getSourceFile: (name, lang) => (resolve(name) === join(SOURCES, 'dom.ts') ? ts.createSourceFile(name, "export const n: number = document.title; export const p = process.pid;\n", lang) : ts.createCompilerHost(parsed.options).getSourceFile(name, lang)) });
  const probeErrors = ts.getPreEmitDiagnostics(probe).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  assert.ok(probeErrors.some((m) => /not assignable to type 'number'/.test(m)), `a type error is reported: ${probeErrors.join('; ')}`);
  assert.ok(probeErrors.some((m) => /Cannot find name 'process'/.test(m)), 'Node globals are not there');
});

test('the build: one classic script per page, the pages, their styles and catalogues; the HTML loads only built files, no inline script', async () => {
  const out = mkdtempSync(join(tmpdir(), 'aios-pages-'));
  try {
    assert.equal(await builder.buildRenderer({ out }), true);
    const files = readdirSync(out).filter((f) => !f.startsWith('.')).sort();
    assert.deepEqual(files, ['app.js', 'capture.html', 'capture.js', 'en.json', 'index.html', 'style.css', 'zh-CN.json']);
    for (const page of ['index.html', 'capture.html']) {
      const html = readFileSync(join(out, page), 'utf8');
      const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
      assert.equal(scripts.length, 1, `${page} loads one script`);
      const [, attrs, body] = scripts[0]!;
      assert.equal(body!.trim(), '', `${page}: no inline script (the CSP is script-src 'self')`);
      const src = /\bsrc="([^"]+)"/.exec(attrs!)?.[1];
      assert.ok(src && files.includes(src), `${page} loads ${src}, which the build wrote`);
      assert.doesNotMatch(attrs!, /type="module"/, 'a classic script: nothing to resolve at run time');
      assert.match(html, /script-src 'self'/);
    }
    for (const bundle of ['app.js', 'capture.js']) {
      const code = readFileSync(join(out, bundle), 'utf8');
      assert.match(code.trimStart(), /^(\(\(\) => \{|"use strict";)/, `${bundle} is one IIFE`);
      assert.doesNotMatch(code, /^\s*(import|export)\s/m, `${bundle} has no module syntax left`);
      assert.doesNotMatch(code, /\bipcRenderer\b|require\(/, `${bundle} holds nothing of Node or Electron`);
    }
    // Both pages use the one JSON-RPC client (control-client.ts): one WebSocket constructor in each bundle.
    for (const bundle of ['app.js', 'capture.js']) assert.equal(readFileSync(join(out, bundle), 'utf8').match(/new WebSocket\(/g)?.length, 1, bundle);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('one JSON-RPC client for both pages: only control-client.ts opens a WebSocket', () => {
  const opening = readdirSync(SOURCES).filter((f) => /\.(ts|js)$/.test(f) && /new WebSocket\(/.test(readFileSync(join(SOURCES, f), 'utf8')));
  assert.deepEqual(opening, ['control-client.ts']);
});

test('built when stale only: a second start finds the build fresh; an older build is built again', async () => {
  const out = mkdtempSync(join(tmpdir(), 'aios-pages-'));
  try {
    assert.equal(builder.isFresh(out), false, 'nothing built yet');
    assert.equal(await builder.buildRenderer({ out, ifStale: true }), true);
    assert.equal(builder.isFresh(out), true);
    assert.equal(await builder.buildRenderer({ out, ifStale: true }), false, 'fresh: not built again');
    // A build older than the sources (an edit to a page since): built again.
    const stamp = join(out, '.built');
    utimesSync(stamp, new Date(0), new Date(0));
    assert.equal(builder.isFresh(out), false);
    const before = statSync(join(out, 'app.js')).mtimeMs;
    utimesSync(join(out, 'app.js'), new Date(0), new Date(0));
    assert.equal(await builder.buildRenderer({ out, ifStale: true }), true);
    assert.ok(statSync(join(out, 'app.js')).mtimeMs >= before, 'app.js written again');
    assert.equal(builder.isFresh(out), true);
    // No temporary files are left behind by the whole-file writes.
    assert.deepEqual(readdirSync(out).filter((f) => f.endsWith('.tmp')), []);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
