/**
 * The layering rules of STYLE.md, checked through ESLint's own Node API with the project's real
 * eslint.config.js: src/ and handlers/ never import electron, handlers use only the SDK entry, electron/
 * uses only src/shell.ts. The code under test is given to `lintText` with a path under src/
 * (and the other folders) rather than written there, so a probe importing `electron` never lands in a shared
 * tree where other people's `tsc` runs would trip over it. The layer rules run on the resolved module graph
 * (eslint-plugin-boundaries), so each probe imports a file that exists in the folder it names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ESLint, type Linter } from 'eslint';

const ROOT = resolve(import.meta.dirname, '..', '..');
type LayerRow = { name: string; folders: string[]; siblings?: boolean; alsoBelow?: string[] };
/** The config's own table of layers (eslint.config.js is plain JS, so its type is said here). */
const { SRC_LAYERS } = (await import(join(ROOT, 'eslint.config.js'))) as { SRC_LAYERS: LayerRow[] };
const eslint = new ESLint({ cwd: ROOT });

async function messagesFor(relPath: string, code: string): Promise<Linter.LintMessage[]> {
  const [r] = await eslint.lintText(code, { filePath: join(ROOT, relPath) });
  assert.ok(r, 'ESLint returned no result');
  return r.messages.filter((m) => LAYER_RULES.has(m.ruleId ?? '') || m.fatal);
}

/** The rules that carry the layering: the electron ban by name, the layers on what an import resolves to. */
const LAYER_RULES = new Set(['no-restricted-imports', 'boundaries/dependencies']);

/** A real file of a src/ folder (the layer check follows the import to it, so it must exist). */
function realFile(folder: string): string {
  const f = readdirSync(join(ROOT, 'src', folder)).filter((n) => n.endsWith('.ts') && !n.endsWith('.d.ts')).sort()[0];
  assert.ok(f, `src/${folder} has no .ts file to probe with`);
  return `${folder}/${f.replace(/\.ts$/, '.js')}`;
}

test('a file under src/ that imports electron is an error naming the alternative', async () => {
  const msgs = await messagesFor('src/agent/__layering_probe.ts', "import { app } from 'electron';\nexport const x = app;\n");
  assert.equal(msgs.length, 1);
  assert.equal(msgs[0]!.severity, 2, 'the layering rule must be an error, not a warning');
  assert.match(msgs[0]!.message, /src\/ is plain Node: put Electron code in electron\/ and reach src\/ through its public entry/);
  const sub = await messagesFor('src/__probe.ts', "import { ipcMain } from 'electron/main';\nexport const y = ipcMain;\n");
  assert.equal(sub.length, 1, 'electron/main is electron too');
});

test('handlers import only the handler SDK entry (their own tests excepted) and never electron', async () => {
  const deep = await messagesFor('handlers/probe/index.ts', "import { Journal } from '../../src/agent/journal.js';\nexport const j = Journal;\n");
  assert.equal(deep.length, 1);
  assert.equal(deep[0]!.severity, 2);
  assert.match(deep[0]!.message, /import the handler SDK instead/);
  const entry = await messagesFor('handlers/probe/index.ts', "import { fail } from '../../src/sdk/index.js';\nexport const f = fail;\n");
  assert.deepEqual(entry, [], 'the SDK entry is allowed');
  const otherSdk = await messagesFor('handlers/probe/index.ts', "import { x } from '../../src/sdk/grants.js';\nexport const f = x;\n");
  assert.equal(otherSdk.length, 1, 'only the SDK entry, not other files in src/sdk');
  const publicEntry = await messagesFor('handlers/probe/index.ts', "import { startAgent } from '../../src/index.js';\nexport const a = startAgent;\n");
  assert.equal(publicEntry.length, 1, "the app's public entry is not the handler SDK");
  const el = await messagesFor('handlers/probe/index.ts', "import { app } from 'electron';\nexport const a = app;\n");
  assert.equal(el.length, 1);
  assert.match(el[0]!.message, /src\/ is plain Node/);
  const testDeep = await messagesFor('handlers/probe/test/x.test.ts', "import { Journal } from '../../../src/agent/journal.js';\nexport const j = Journal;\n");
  assert.deepEqual(testDeep, [], "a handler's tests may build the host's internals");
  const testEl = await messagesFor('handlers/probe/test/x.test.ts', "import { app } from 'electron';\nexport const a = app;\n");
  assert.equal(testEl.length, 1, 'but not electron');
});

test('electron/ reaches src/ only through src/shell.ts; the renderer imports nothing of it (of the shell, only types)', async () => {
  const deep = await messagesFor('electron/main.ts', "import { Agent } from '../src/agent/agent.js';\nexport const a = Agent;\n");
  assert.equal(deep.length, 1);
  assert.equal(deep[0]!.severity, 2);
  assert.match(deep[0]!.message, /only through its shell entry: import from \.\.\/src\/shell\.js/);
  assert.deepEqual(await messagesFor('electron/main.ts', "import { AgentHost } from '../src/shell.js';\nexport const a = AgentHost;\n"), []);
  // The library surface is not the shell's entry: one named entry, so what the shell uses is listed in one place.
  const library = await messagesFor('electron/main.ts', "import { startAgent } from '../src/index.js';\nexport const a = startAgent;\n");
  assert.equal(library.length, 1, 'src/index.ts is not the shell entry');
  assert.match(library[0]!.message, /src\/shell\.js/);
  const dynamic = await messagesFor('electron/ipc.ts', "export const m = await import('../src/consent/index.js');\n");
  assert.equal(dynamic.length, 1, 'import() is checked like import');
  assert.deepEqual(await messagesFor('electron/main.ts', "import { app } from 'electron';\nexport const a = app;\n"), []);
  const r = await messagesFor('electron/renderer/app.ts', "import { AgentHost } from '../../src/shell.js';\nexport const a = AgentHost;\n");
  assert.ok(r.length >= 1 && r.every((m) => m.severity === 2));
  assert.ok(r.some((m) => /The renderer is a web page/.test(m.message)));
  assert.equal((await messagesFor('electron/renderer/app.ts', "import { ipcRenderer } from 'electron';\nexport const a = ipcRenderer;\n")).length, 1);
  // The page may name the preload's API type (erased by the bundler), never take a value of the shell.
  assert.deepEqual(await messagesFor('electron/renderer/app.ts', "import type { DeviceApi } from '../ipc-channels.js';\nexport type A = DeviceApi;\n"), []);
  const value = await messagesFor('electron/renderer/app.ts', "import { IPC } from '../ipc-channels.js';\nexport const a = IPC;\n");
  assert.equal(value.length, 1);
  assert.match(value[0]!.message, /The renderer is a web page/);
  assert.deepEqual(await messagesFor('electron/renderer/app.ts', "import { t } from './catalogue.js';\nexport const a = t;\n"), [], "the page's own modules");
  // The control API's plain modules (TypeBox only) are bundled by the preload and the page; its server side is not.
  for (const f of ['api', 'client', 'ipc']) {
    assert.deepEqual(await messagesFor('electron/preload.ts', `import * as m from '../src/control/${f}.js';\nexport const a = m;\n`), [], `the preload may import src/control/${f}.ts`);
    assert.deepEqual(await messagesFor('electron/renderer/app.ts', `import * as m from '../../src/control/${f}.js';\nexport const a = m;\n`), [], `the page may import src/control/${f}.ts`);
  }
  assert.equal((await messagesFor('electron/preload.ts', "import * as m from '../src/control/server.js';\nexport const a = m;\n")).length, 1, 'not the server side');
  assert.ok((await messagesFor('electron/renderer/app.ts', "import * as m from '../../src/control/server.js';\nexport const a = m;\n")).length >= 1, 'not the server side');
});

test('the config keeps the layering rules at error level for src/**, handlers/** and electron/**', async () => {
  const rule = async (rel: string, id: string) => {
    const cfg = (await eslint.calculateConfigForFile(join(ROOT, rel))) as { rules: Record<string, unknown> };
    const r = cfg.rules[id] as [number | string, ...unknown[]] | undefined;
    assert.ok(r, `${id} is not configured for ${rel}`);
    assert.ok(r[0] === 2 || r[0] === 'error', `${id} is not an error for ${rel} (${String(r[0])})`);
    return JSON.stringify(r.slice(1));
  };
  for (const rel of ['src/any/file.ts', 'src/cli/main.ts', 'handlers/any/file.ts', 'handlers/any/test/file.test.ts']) {
    assert.match(await rule(rel, 'no-restricted-imports'), /"name":"electron"/, `the electron ban for ${rel} lost its restriction`);
  }
  for (const rel of ['src/agent/file.ts', 'handlers/any/file.ts', 'electron/main.ts']) {
    const opts = JSON.parse(await rule(rel, 'boundaries/dependencies')) as { default?: string; policies?: unknown[] }[];
    assert.ok((opts[0]?.policies ?? []).length > 0, `boundaries/dependencies for ${rel} has no policies`);
  }
});

/** Every file under `dir` (relative to ROOT) with one of the extensions. */
function sourceFiles(dir: string, out: string[] = []): string[] {
  let names: string[];
  try {
    names = readdirSync(join(ROOT, dir));
  } catch {
    return out;
  }
  for (const n of names) {
    const rel = join(dir, n);
    if (n === 'node_modules') continue;
    if (statSync(join(ROOT, rel)).isDirectory()) sourceFiles(rel, out);
    else if (/\.(ts|js|mjs|cjs)$/.test(n)) out.push(rel);
  }
  return out;
}

test('no file switches the layering rule off inline', () => {
  const offenders = ['src', 'handlers', 'electron']
    .flatMap((d) => sourceFiles(d))
    .filter((f) => /eslint-disable[^\n]*no-restricted-imports|eslint-disable(-next-line|-line)?\s*(\*\/|$)/m.test(readFileSync(join(ROOT, f), 'utf8')));
  assert.deepEqual(offenders, [], 'these files disable the layering rule (or every rule) inline');
});

test('the tree as it stands has no layering violations', async () => {
  const only = new ESLint({ cwd: ROOT, errorOnUnmatchedPattern: false, ruleFilter: ({ ruleId }) => LAYER_RULES.has(ruleId) });
  const results = await only.lintFiles(['src', 'handlers', 'electron']);
  const found = results.flatMap((r) => r.messages.filter((m) => LAYER_RULES.has(m.ruleId ?? '') || m.fatal).map((m) => `${r.filePath.slice(ROOT.length + 1)}:${m.line} ${m.message}`));
  assert.deepEqual(found, []);
});

// --- Layers inside src/ (docs/architecture.md). This table is the test's own copy of the layering, not
// --- read from eslint.config.js: a rule dropped or loosened there no longer matches it and a probe fails.
const LAYERS: { name: string; folders: string[]; siblings?: boolean; alsoBelow?: string[] }[] = [
  { name: 'base', folders: ['base', 'i18n'] },
  { name: 'protocol', folders: ['protocol'] },
  { name: 'control API', folders: ['control'] },
  { name: 'foundations', folders: ['storage', 'config', 'identity', 'sdk', 'seams'] },
  { name: 'discovery and grants', folders: ['discovery', 'grants'] },
  { name: 'services', folders: ['agent', 'bridge', 'endpoint', 'consent'], siblings: true },
  { name: 'runtime client', folders: ['runtime-client'], alsoBelow: ['agent', 'endpoint', 'consent'] },
  { name: 'kit tools', folders: ['kit'], alsoBelow: ['bridge', 'endpoint', 'consent'] },
  { name: 'composition root', folders: ['app'] },
  { name: 'commands', folders: ['cli', 'trial'] },
];
const ALL_FOLDERS = LAYERS.flatMap((l) => l.folders);
const SIBLING = /agent\/, bridge\/, endpoint\/ and consent\/ are siblings/;
const layerMessage = (name: string) => new RegExp(`Layer "${name}" of src/ imports only from the layers below it`);

interface Place { probe: string; prefix: string; layer: string; forbidden: Map<string, RegExp> }

/** Where a file can stand inside src/, the folders it must not import, and the message each must give. */
function places(): Place[] {
  const out: Place[] = [];
  LAYERS.forEach((layer, i) => {
    const above = [...(layer.alsoBelow ?? []), ...LAYERS.slice(i + 1).flatMap((l) => l.folders)];
    for (const f of layer.folders) {
      const forbidden = new Map<string, RegExp>(above.map((t) => [t, layerMessage(layer.name)]));
      if (layer.siblings) for (const o of layer.folders) if (o !== f) forbidden.set(o, SIBLING);
      out.push({ probe: `src/${f}/__layering_probe.ts`, prefix: '../', layer: layer.name, forbidden });
      // A file one folder deeper reaches the same folders with one more `../`.
      out.push({ probe: `src/${f}/nested/__layering_probe.ts`, prefix: '../../', layer: layer.name, forbidden });
    }
  });
  // src/version.ts stands with base/.
  out.push({ probe: 'src/version.ts', prefix: './', layer: 'base', forbidden: new Map(ALL_FOLDERS.filter((t) => t !== 'base' && t !== 'i18n').map((t) => [t, layerMessage('base')])) });
  return out;
}

test('every src/ folder stands in a layer of the table (a new folder must be placed)', () => {
  const folders = readdirSync(join(ROOT, 'src')).filter((n) => statSync(join(ROOT, 'src', n)).isDirectory());
  assert.deepEqual(folders.filter((f) => !ALL_FOLDERS.includes(f)), [], 'add these folders to a layer in eslint.config.js (SRC_LAYERS), this test and docs/architecture.md');
  assert.deepEqual(ALL_FOLDERS.filter((f) => !folders.includes(f)), [], 'the table names folders that do not exist');
});

test('each layer rule inside src/ bites: an import of a folder above (or of a sibling) is an error naming the rule', async () => {
  const missed: string[] = [];
  for (const p of places()) {
    for (const [target, message] of p.forbidden) {
      const msgs = await messagesFor(p.probe, `import { x } from '${p.prefix}${realFile(target)}';\nexport const y = x;\n`);
      if (msgs.length !== 1 || msgs[0]!.severity !== 2 || !message.test(msgs[0]!.message)) missed.push(`${p.probe} -> ${target}: ${JSON.stringify(msgs.map((m) => m.message))}`);
    }
  }
  assert.deepEqual(missed, [], 'these imports should be refused with the rule named');
});

test('imports of the same layer and the layers below are allowed', async () => {
  const wrong: string[] = [];
  for (const p of places()) {
    for (const target of ALL_FOLDERS.filter((t) => !p.forbidden.has(t))) {
      const msgs = await messagesFor(p.probe, `import { x } from '${p.prefix}${realFile(target)}';\nexport const y = x;\n`);
      if (msgs.length) wrong.push(`${p.probe} -> ${target}: ${msgs[0]!.message}`);
    }
  }
  assert.deepEqual(wrong, [], 'these imports go down (or sideways where allowed) and must not be refused');
});

test('the config places the folders as this table does (a layer dropped or moved there fails here)', () => {
  const cfg = SRC_LAYERS.map((l) => ({ name: l.name, folders: l.folders, siblings: l.siblings ?? false, alsoBelow: l.alsoBelow ?? [] }));
  const mine = LAYERS.map((l) => ({ name: l.name, folders: l.folders, siblings: l.siblings ?? false, alsoBelow: l.alsoBelow ?? [] }));
  assert.deepEqual(cfg, mine);
});

test('an import is judged by the file it reaches, however it is spelled, and import() counts', async () => {
  // From consent/, a path that wanders through handlers/ and back still reaches agent/ (a sibling).
  const wander = await messagesFor('src/consent/__layering_probe.ts', "import { x } from '../../handlers/../src/agent/abort.js';\nexport const y = x;\n");
  assert.equal(wander.length, 1);
  assert.match(wander[0]!.message, SIBLING);
  const dynamic = await messagesFor('src/protocol/__layering_probe.ts', "export const load = () => import('../agent/abort.js');\n");
  assert.equal(dynamic.length, 1, 'a dynamic import of a layer above is refused too');
  assert.match(dynamic[0]!.message, layerMessage('protocol'));
});

test('the core takes Logger from base/, not through the handler SDK (handlers and the SDK itself may)', async () => {
  const viaSdk = "import type { Logger } from '../sdk/index.js';\nexport type L = Logger;\n";
  const refused = await messagesFor('src/agent/probe.ts', viaSdk);
  assert.ok(refused.some((m) => m.message.includes('base/logger.js')), JSON.stringify(refused));
  assert.deepEqual(await messagesFor('src/agent/probe.ts', "import type { Logger } from '../base/logger.js';\nexport type L = Logger;\n"), []);
  assert.deepEqual(await messagesFor('src/sdk/probe.ts', "import type { Logger } from './index.js';\nexport type L = Logger;\n"), []);
  // The rule that carries it does not drop the electron ban for src/.
  assert.ok((await messagesFor('src/agent/probe.ts', "import { app } from 'electron';\nexport const a = app;\n")).length > 0);
});

test('the runtime client stands below both commands: it imports neither cli/ nor trial/, and both import it', async () => {
  for (const target of ['cli/say.js', 'cli/process.js', 'trial/context.js']) {
    const msgs = await messagesFor('src/runtime-client/__layering_probe.ts', `import { x } from '../${target}';\nexport const y = x;\n`);
    assert.equal(msgs.length, 1, `runtime-client -> ${target} must be refused`);
    assert.match(msgs[0]!.message, layerMessage('runtime client'));
  }
  const dynamic = await messagesFor('src/runtime-client/__layering_probe.ts', "export const load = () => import('../cli/say.js');\n");
  assert.equal(dynamic.length, 1, 'a dynamic import of cli/ from the runtime client is refused too');
  // It takes the bridge's record types, never the other services.
  assert.deepEqual(await messagesFor('src/runtime-client/__layering_probe.ts', "import type { CallRecord } from '../bridge/store.js';\nexport type C = CallRecord;\n"), []);
  assert.equal((await messagesFor('src/runtime-client/__layering_probe.ts', "import { x } from '../agent/abort.js';\nexport const y = x;\n")).length, 1);
  for (const probe of ['src/cli/__layering_probe.ts', 'src/trial/__layering_probe.ts']) {
    assert.deepEqual(await messagesFor(probe, "import { RuntimeClient } from '../runtime-client/client.js';\nexport const c = RuntimeClient;\n"), [], `${probe} may import the runtime client`);
  }
});
