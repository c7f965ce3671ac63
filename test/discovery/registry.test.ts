import { test, before, after } from 'node:test';
import { until } from '../helpers/wait.js';
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { WebSocket } from 'ws';
import { AdapterRegistry } from '../../src/discovery/registry.js';
import type { RegistryChange } from '../../src/discovery/adapter-entry.js';
import { TrustStore, parseJwks } from '../../src/discovery/trust-store.js';
import { signAdapterDir } from '../../src/discovery/adapter-tools.js';
import { renderProblem, type ProblemMessage } from '../../src/discovery/adapter-problem.js';
import { LocalEndpoint } from '../../src/endpoint/local-endpoint.js';
import type { AdapterStatus } from '../../src/discovery/local-adapter.js';
import type { CallContext } from '../../src/sdk/index.js';
import { standaloneTemp } from '../../src/sdk/temp.js';

const EXAMPLE = new URL('../../examples/hello-adapter/', import.meta.url).pathname;
let root: string;
let userDir: string;
let systemDir: string;
let desktopDir: string;
let trust: TrustStore;
let testKey: Awaited<ReturnType<typeof makeKey>>;

async function makeKey(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256' } as JWK;
  return { kid, alg: 'ES256' as const, privateKey, publicJwk };
}

function ctx(): CallContext {
  const log = { debug() {}, info() {}, warn() {}, error() {}, child: () => log };
  return { callId: 'c1', functionId: 'x', signal: new AbortController().signal, requester: undefined, log, blobs: {} as never, progress() {}, commit() {}, resources: [], ...standaloneTemp() };
}

/** The parts of an `aios/registry.search` answer these tests read. */
interface SearchAnswer {
  adapters: { id: string }[];
  total: number;
  next_cursor?: string;
}

/** The parts of an `aios/registry.info` answer these tests read. */
interface InfoAnswer {
  status: AdapterStatus;
  skills: { id: string }[];
}

/** A message on WS /rpc: the reply to one of our requests (`id`) or a notification (`method`). */
interface RpcMessage {
  id?: number;
  result?: { subscription_id?: string };
  method?: string;
  params?: unknown;
}

/** Calls one of the registry's `aios/registry.*` methods as an authenticated local caller; `T` is the answer's shape. */
function call<T>(reg: AdapterRegistry, method: string, params: unknown): Promise<T> {
  return reg.registryMethods()[method]!(params, { authenticated: true }) as Promise<T>;
}

/** Copies the example into staging, lets the test change it, then renames it in (one atomic "drop"). */
async function drop(into: string, name: string, edit?: (dir: string) => Promise<void>): Promise<string> {
  const staging = join(root, 'staging', name);
  await rm(staging, { recursive: true, force: true });
  await cp(join(EXAMPLE, 'org.example.hello'), staging, { recursive: true });
  if (edit) await edit(staging);
  const dest = join(into, name);
  await rename(staging, dest);
  return dest;
}

function nextChange(reg: AdapterRegistry, pred: (c: RegistryChange) => boolean, ms = 30_000): Promise<RegistryChange> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      reg.off('changed', on);
      reject(new Error(`no matching change within ${ms} ms`));
    }, ms);
    const on = (c: RegistryChange) => {
      if (!pred(c)) return;
      clearTimeout(t);
      reg.off('changed', on);
      resolve(c);
    };
    reg.on('changed', on);
  });
}

async function registry(opts: Partial<ConstructorParameters<typeof AdapterRegistry>[0]> = {}) {
  const reg = new AdapterRegistry({ dirs: [userDir, systemDir], desktopDirs: [desktopDir], trust, dataDir: join(root, 'data'), inferFromDesktop: false, ...opts });
  await reg.start();
  await reg.remoteReady;
  return reg;
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'aios-reg-'));
  userDir = join(root, 'user', 'adapters');
  systemDir = join(root, 'system', 'adapters');
  desktopDir = join(root, 'applications');
  for (const d of [userDir, systemDir, desktopDir, join(root, 'staging')]) await mkdir(d, { recursive: true });
  testKey = await makeKey('test-publisher');
  const exampleKeys = parseJwks(JSON.parse(await readFile(join(EXAMPLE, 'keys', 'EXAMPLE-ONLY.jwks'), 'utf8')));
  trust = TrustStore.of([...exampleKeys, testKey.publicJwk]);
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('a signed adapter dropped into a watched folder becomes callable and is announced; removing it withdraws it', async () => {
  const reg = await registry();
  const ep = new LocalEndpoint({ port: 0, socketPath: null, dataDir: join(root, 'ep'), version: '1' });
  const http = (await ep.start()).http;
  ep.addMethods(reg.registryMethods());
  let revision = 0;
  // The agent's wiring: every change goes to the bridge (not here) and to local subscribers with one revision.
  reg.on('changed', (c: RegistryChange) => {
    if (c.added.length || c.removed.length || c.updated.length) reg.publish({ revision: ++revision, added: c.added, removed: c.removed, updated: c.updated });
  });
  const ws = new WebSocket(`${http.replace('http', 'ws')}/rpc`, { headers: { Authorization: `Bearer ${ep.localToken}` } });
  const notes: RpcMessage[] = [];
  ws.on('message', (d) => notes.push(JSON.parse(String(d)) as RpcMessage));
  await new Promise((r) => ws.on('open', r));
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'aios/registry.subscribe', params: { events: ['added', 'removed', 'updated'] } }));
  await until(() => notes.some((n) => n.id === 1));
  assert.match(notes.find((n) => n.id === 1)?.result?.subscription_id ?? '', /^sub_/);
  try {
    assert.equal(reg.functions().length, 0);
    const added = nextChange(reg, (c) => c.added.some((f) => f.id === 'hello.greet'));
    await drop(userDir, 'org.example.hello');
    await added;
    const fn = reg.functions().find((f) => f.descriptor.id === 'hello.greet');
    assert.ok(fn);
    // The card claims public; the level is the user's to choose, high until someone does (issue 35).
    assert.equal(fn.descriptor.permission_level, 'high');
    assert.deepEqual(await fn.run({ name: 'Ada' } as never, ctx()), { greeting: 'Hello, Ada!' });
    await until(() => notes.some((n) => n.method === 'aios/notification.tools_changed'));
    assert.deepEqual(notes.find((n) => n.method === 'aios/notification.tools_changed')?.params, {
      revision: 1, added: [{ id: 'hello.greet', name: 'Greet someone' }], removed: [], updated: [],
    });

    const removed = nextChange(reg, (c) => c.removed.some((f) => f.id === 'hello.greet'));
    await rm(join(userDir, 'org.example.hello'), { recursive: true });
    await removed;
    assert.equal(reg.functions().some((f) => f.descriptor.id === 'hello.greet'), false);
    await until(() => notes.filter((n) => n.method === 'aios/notification.tools_changed').length >= 2);
  } finally {
    ws.close();
    await ep.stop();
    await reg.stop();
  }
});

test('unsigned, tampered code and tampered card are refused with the reason in registry.info; the others keep working', async () => {
  const reg = await registry();
  const info = (adapterId: string) => call<InfoAnswer>(reg, 'aios/registry.info', { adapter_id: adapterId });
  try {
    const changed = nextChange(reg, (c) => c.adapters.added.length + c.adapters.updated.length > 0);
    await drop(userDir, 'good', async (d) => {
      // Same code under another id, signed by the test publisher.
      const y = await readFile(join(d, 'tool.aios.yaml'), 'utf8');
      await writeFile(join(d, 'tool.aios.yaml'), y.replace('id: org.example.hello', 'id: org.example.good').replace(/hello\.greet/g, 'good.greet'));
      await writeFile(join(d, 'index.mjs'), (await readFile(join(d, 'index.mjs'), 'utf8')).replace(/hello\.greet/g, 'good.greet').replace("name: 'org.example.hello'", "name: 'org.example.good'"));
      await rm(join(d, 'adapter.json'));
      await signAdapterDir(d, testKey);
    });
    await changed;
    await drop(systemDir, 'unsigned', async (d) => {
      await rm(join(d, 'adapter.json'));
      const y = await readFile(join(d, 'tool.aios.yaml'), 'utf8');
      await writeFile(join(d, 'tool.aios.yaml'), y.replace('id: org.example.hello', 'id: org.example.unsigned').replace(/hello\.greet/g, 'unsigned.greet'));
    });
    await drop(systemDir, 'tampered-code', async (d) => {
      // A card signed properly (under its own id), then one byte of the code changed after signing.
      const y = await readFile(join(d, 'tool.aios.yaml'), 'utf8');
      await writeFile(join(d, 'tool.aios.yaml'), y.replace('id: org.example.hello', 'id: org.example.tampered_code').replace(/hello\.greet/g, 'tampered_code.greet'));
      await writeFile(join(d, 'index.mjs'), (await readFile(join(d, 'index.mjs'), 'utf8')).replace(/hello\.greet/g, 'tampered_code.greet').replace("name: 'org.example.hello'", "name: 'org.example.tampered_code'"));
      await rm(join(d, 'adapter.json'));
      await signAdapterDir(d, testKey);
      const code = await readFile(join(d, 'index.mjs'));
      code[code.indexOf('Hello')] = 'J'.charCodeAt(0); // one byte
      await writeFile(join(d, 'index.mjs'), code);
    });
    await drop(systemDir, 'tampered-card', async (d) => {
      const text = await readFile(join(d, 'adapter.json'), 'utf8');
      await writeFile(join(d, 'adapter.json'), text.replace('Greets someone by name.', 'Greets someone by name!'));
    });
    await drop(systemDir, 'broken', async (d) => writeFile(join(d, 'adapter.json'), '{ not json'));
    await reg.refresh('local');

    const unsigned = await info('org.example.unsigned');
    assert.equal(unsigned.status.available, false);
    assert.match(unsigned.status.reason ?? '', /not signed/);

    const tc = await info('org.example.tampered_code');
    assert.equal(tc.status.available, false);
    // The signature is good; the code it binds is not the code in the folder.
    assert.match(tc.status.reason ?? '', /index\.mjs does not match its signed hash/);

    const card = await info('org.example.hello');
    assert.equal(card.status.available, false);
    assert.match(card.status.reason ?? '', /signature refused: .*does not verify/);

    const broken = await info('broken');
    assert.equal(broken.status.available, false);
    assert.match(broken.status.reason ?? '', /not valid JSON/);

    const good = await info('org.example.good');
    assert.equal(good.status.available, true, good.status.reason);
    assert.deepEqual(reg.functions().map((f) => f.descriptor.id), ['good.greet']);

    // Beside each English reason, its catalogue message as plain data: what `adapters list` gets from a
    // running agent (over JSON) and says in its user's language.
    const zh = (i: { status: { reason_message?: unknown } }) => renderProblem(JSON.parse(JSON.stringify(i.status.reason_message)) as ProblemMessage, 'zh-CN');
    assert.match(zh(unsigned), /^该适配器未签名：请用 `aios-device adapter sign` 签名/);
    assert.equal(zh(tc), '代码被拒绝：文件 index.mjs 与其签名时的哈希不符');
    assert.match(zh(card), /^签名被拒绝：/);
    assert.equal(zh(broken), 'adapter.json 不是有效的 JSON');
    const tcSaid = tc.status.reason_message;
    assert.ok(tcSaid, 'the reason comes with its message');
    assert.equal(renderProblem(tcSaid, 'en'), tc.status.reason, 'the English reason is the message in en');
  } finally {
    await reg.stop();
    for (const n of ['good']) await rm(join(userDir, n), { recursive: true, force: true });
    for (const n of ['unsigned', 'tampered-code', 'tampered-card', 'broken']) await rm(join(systemDir, n), { recursive: true, force: true });
  }
});

test('one changed byte in signed code (card untouched) is refused by the code binding', async () => {
  const reg = await registry();
  try {
    await drop(userDir, 'org.example.hello', async (d) => {
      const code = await readFile(join(d, 'index.mjs'));
      code[code.indexOf('Hello')] = 'J'.charCodeAt(0);
      await writeFile(join(d, 'index.mjs'), code);
    });
    await reg.refresh('local');
    const e = reg.getAdapter('org.example.hello');
    assert.equal(e?.status.available, false);
    assert.equal(e?.status.reason, 'code refused: file index.mjs does not match its signed hash');
    await writeFile(join(userDir, 'org.example.hello', 'extra.mjs'), 'export default 1;\n');
    await rm(join(userDir, 'org.example.hello', 'index.mjs'));
    await cp(join(EXAMPLE, 'org.example.hello', 'index.mjs'), join(userDir, 'org.example.hello', 'index.mjs'));
    await reg.refresh('local');
    assert.match(reg.getAdapter('org.example.hello')?.status.reason ?? '', /extra\.mjs is not covered by the signature/);
  } finally {
    await reg.stop();
    await rm(join(userDir, 'org.example.hello'), { recursive: true, force: true });
  }
});

test('developer mode loads an unsigned adapter with a visible warning', async () => {
  const dir = await drop(userDir, 'dev', async (d) => rm(join(d, 'adapter.json')));
  const reg = await registry({ developerMode: true });
  try {
    const e = reg.getAdapter('org.example.hello');
    assert.equal(e?.status.available, true);
    assert.match(e?.status.warning ?? '', /developer mode/);
    const search = await call<SearchAnswer>(reg, 'aios/registry.search', { query: 'hello' });
    assert.deepEqual(search, { adapters: [{ id: 'org.example.hello', name: 'Hello example adapter', version: '1.0.0', skills_count: 1, status: 'available' }], total: 1 });
  } finally {
    await reg.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test('an adapter that lost a function id to another gets it once the other is gone', async () => {
  const renamed = (id: string) => async (d: string) => {
    await rm(join(d, 'adapter.json'));
    const y = join(d, 'tool.aios.yaml');
    await writeFile(y, (await readFile(y, 'utf8')).replace('id: org.example.hello', `id: ${id}`));
  };
  const a = await drop(userDir, 'clash-a', renamed('a.one'));
  const b = await drop(userDir, 'clash-b', renamed('b.two'));
  const reg = await registry({ developerMode: true, watch: false });
  try {
    assert.equal(reg.getAdapter('a.one')?.status.available, true);
    assert.match(reg.getAdapter('b.two')?.status.reason ?? '', /hello\.greet is already provided by adapter a\.one/);
    await rm(a, { recursive: true, force: true });
    await reg.refresh('local');
    assert.equal(reg.getAdapter('b.two')?.status.available, true, reg.getAdapter('b.two')?.status.reason);
    assert.equal(reg.getAdapter('b.two')?.functions.length, 1);
  } finally {
    await reg.stop();
    await rm(a, { recursive: true, force: true });
    await rm(b, { recursive: true, force: true });
  }
});

test('priority: an Adapter Card beats a tool.aios.yaml of the same id, whatever the folder order', async () => {
  const yamlOnly = await drop(userDir, 'as-yaml', async (d) => rm(join(d, 'adapter.json')));
  const card = await drop(systemDir, 'as-card');
  const reg = await registry({ developerMode: true });
  try {
    const e = reg.getAdapter('org.example.hello');
    assert.equal(e?.source.path, card);
    assert.equal(e?.status.warning, undefined, 'the signed card was chosen, not the unsigned yaml');
  } finally {
    await reg.stop();
    await rm(yamlOnly, { recursive: true, force: true });
    await rm(card, { recursive: true, force: true });
  }
});

test('requirements.software.detection follows installed .desktop files, and desktop apps appear as inferred entries', async () => {
  const dir = await drop(userDir, 'needs-app', async (d) => {
    await rm(join(d, 'adapter.json'));
    const y = await readFile(join(d, 'tool.aios.yaml'), 'utf8');
    await writeFile(join(d, 'tool.aios.yaml'), y + 'requirements:\n  software:\n    name: Foo Viewer\n    detection: { desktop_file: foo-viewer.desktop, executable: /nonexistent/foo-viewer }\n');
    await signAdapterDir(d, testKey);
  });
  await writeFile(join(desktopDir, 'bar.desktop'), '[Desktop Entry]\nType=Application\nName=Bar Editor\nExec=/usr/bin/bar %F\n');
  const reg = await registry({ inferFromDesktop: true });
  try {
    const before = reg.getAdapter('org.example.hello');
    assert.equal(before?.status.available, false);
    assert.equal(before?.status.software_installed, false);
    assert.match(before?.status.reason ?? '', /requires Foo Viewer, which is not installed/);
    assert.equal(reg.getAdapter('desktop.bar')?.kind, 'inferred');

    const installed = nextChange(reg, (c) => c.added.some((f) => f.id === 'hello.greet'));
    await writeFile(join(desktopDir, 'foo-viewer.desktop'), '[Desktop Entry]\nType=Application\nName=Foo Viewer\nExec=foo-viewer\n');
    await installed;
    const after = reg.getAdapter('org.example.hello');
    assert.equal(after?.status.available, true);
    assert.equal(after?.status.software_installed, true);
    assert.equal(reg.getAdapter('desktop.foo-viewer'), undefined, 'the adapter claims the app, so it is not inferred separately');
  } finally {
    await reg.stop();
    await rm(dir, { recursive: true, force: true });
    await rm(join(desktopDir, 'foo-viewer.desktop'), { force: true });
    await rm(join(desktopDir, 'bar.desktop'), { force: true });
  }
});

test('registry methods: shapes of search/info/refresh, params checked, subscribe needs a notification channel', async () => {
  const reg = await registry();
  reg.addBuiltin({ id: 'aios.builtin.device', name: 'Device', version: '0.1.0' }, [
    { id: 'device.info', name: 'Device info', description: '', version: '1', capability_type: 'device', access: 'public', permission_level: 'public', confirmation: 'never', input_schema: {}, output_schema: {}, timeout_ms_default: 1, timeout_ms_max: 1, cancellable: false, locks: [] },
  ]);
  const m = reg.registryMethods();
  const c = { authenticated: true };
  const search = (params: unknown) => call<SearchAnswer>(reg, 'aios/registry.search', params);
  try {
    const dir = await drop(userDir, 'org.example.hello');
    assert.deepEqual(await m['aios/registry.refresh']!({ scope: 'local' }, c), { added: [{ id: 'org.example.hello', name: 'Hello example adapter' }], removed: [], updated: [] });
    const all = await search({});
    assert.equal(all.total, 2);
    assert.deepEqual(all.adapters.map((a) => a.id), ['aios.builtin.device', 'org.example.hello']);
    const byType = await search({ type: 'device' });
    assert.deepEqual(byType.adapters.map((a) => a.id), ['aios.builtin.device']);
    const page = await search({ limit: 1 });
    assert.equal(page.next_cursor, '1');
    assert.deepEqual((await search({ limit: 1, cursor: page.next_cursor })).adapters.map((a) => a.id), ['org.example.hello']);
    assert.equal((await search({ capabilities: ['streaming'] })).total, 0);
    const info = await call<InfoAnswer>(reg, 'aios/registry.info', { adapter_id: 'org.example.hello' });
    assert.deepEqual(Object.keys(info).sort(), ['adapter', 'capabilities', 'skills', 'source', 'status']);
    assert.deepEqual(Object.keys(info.status).sort(), ['available', 'software_installed', 'software_running']);
    assert.equal(info.skills[0]?.id, 'hello.greet');
    await assert.rejects(m['aios/registry.info']!({ adapter_id: 'nope' }, c), /Unknown adapter/);
    await assert.rejects(search({ limit: 'x' }), { code: -32602 });
    await assert.rejects(m['aios/registry.subscribe']!({ events: ['added'] }, c), /notifications/);
    assert.deepEqual(await m['aios/registry.unsubscribe']!({ subscription_id: 'sub_x' }, c), {});
    await rm(dir, { recursive: true });
  } finally {
    await reg.stop();
  }
});

