/**
 * Discovery wired into the running agent: the signed card served on the local endpoint and sent in
 * hello, /metrics fed by real calls, and a signed adapter dropped into a watched folder becoming callable
 * through the bridge (and leaving again when removed).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { request } from 'node:http';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadSigningKeyFile, signAdapterDir } from '../../src/discovery/adapter-tools.js';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import type { JWK } from 'jose';
import { inProcessStack, ids, until, ROOT } from '../helpers/stack.js';
import { METHODS } from '../../src/protocol/messages.js';
import type { DeviceConnection } from '../../src/bridge/device-hub.js';
import { RENDERER_DIR } from '../../src/version.js';

type Stack = Awaited<ReturnType<typeof inProcessStack>>;
const canon = canonicalize as unknown as (v: unknown) => string;

describe('discovery on a running agent', () => {
  let s: Stack;
  let http: string;
  let adaptersDir: string;
  before(async () => {
    const dir = join(ROOT, '.test-tmp-' + process.pid);
    adaptersDir = join(dir, 'adapters');
    mkdirSync(adaptersDir, { recursive: true });
    s = await inProcessStack({
      agent: {
        // The admin lowered hello.greet to what its card claims: it runs without a prompt.
        adapters: { dirs: [adaptersDir], approved: { 'org.example.hello': { levels: { 'hello.greet': 'public' } }, 'org.example.renamed': { levels: { 'hello.greet': 'public' } }, 'org.example.slow': {} } },
        trust: { keys: [join(ROOT, 'examples/hello-adapter/keys/EXAMPLE-ONLY.jwks')] },
      },
    });
    http = s.running.discovery.endpoint!.info()!.http;
  });
  after(async () => {
    await s.stop();
    rmSync(join(adaptersDir, '..'), { recursive: true, force: true });
  });

  test('the card on the local endpoint verifies with the published JWKS (node:crypto only) and is the one in hello', async () => {
    const card = (await (await fetch(`${http}/.well-known/aios-adapter.json`)).json()) as { skills: { id: string }[]; signature: { value: string; key_id: string } };
    const jwks = (await (await fetch(`${http}/.well-known/jwks.json`)).json()) as { keys: Record<string, string>[] };
    const [h, , sig] = card.signature.value.split('.');
    const { signature: _s, ...unsigned } = card;
    const input = Buffer.from(`${h}.${Buffer.from(canon(unsigned)).toString('base64url')}`);
    const jwk = jwks.keys.find((k) => k['kid'] === card.signature.key_id) ?? jwks.keys[0]!;
    const ok = verify('sha256', input, { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' }, Buffer.from(sig!, 'base64url'));
    assert.equal(ok, true);
    assert.ok(card.skills.some((k) => k.id === 'device.info'));
    // With credentials the complete card (private skills too) is served: the one in hello (issue 13, Low 4).
    const full = (await (await fetch(`${http}/.well-known/aios-adapter.json`, { headers: { Authorization: `Bearer ${s.running.discovery.endpoint!.localToken}` } })).json()) as typeof card;
    const dev = await s.client.device(ids.device_id);
    assert.deepEqual(dev['adapter_card'], full, 'the bridge holds the same signed card from hello');
  });

  test('/ui/ serves only the tray page\'s own files, with its policy and no CORS', async () => {
    const raw = (path: string) =>
      new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
        const u = new URL(http);
        const req = request({ host: u.hostname, port: u.port, path, method: 'GET' }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, headers: res.headers });
        });
        req.on('error', reject);
        req.end();
      });
    const page = await raw('/ui/');
    assert.equal(page.status, 200);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
    assert.equal(page.headers['access-control-allow-origin'], undefined);
    assert.equal((await raw('/ui')).status, 301);
    for (const bad of ['/ui/../local-token', '/ui/%2e%2e/local-token', '/ui/.hidden.js', '/ui/sub/app.js', '/ui/app.json']) {
      assert.equal((await raw(bad)).status, 404, bad);
    }
  });

  test('/ui/ serves the pages built from electron/renderer/ (an agent run from source builds them when stale)', async () => {
    // This agent runs from source under tsx, where nothing was built first: it built dist/renderer/ at start.
    for (const [file, entry] of [['app.js', 'app.ts'], ['capture.js', 'capture.ts']] as const) {
      const res = await fetch(`${http}/ui/${file}`);
      assert.equal(res.status, 200, file);
      assert.match(res.headers.get('content-type') ?? '', /javascript/);
      const served = await res.text();
      assert.equal(served, readFileSync(join(RENDERER_DIR, file), 'utf8'), `${file} is the build's`);
      assert.doesNotMatch(served, /^\s*(import|export)\s/m, `${file} is bundled: no module syntax left`);
      assert.ok(statSync(join(RENDERER_DIR, file)).mtimeMs >= statSync(join(ROOT, 'electron', 'renderer', entry)).mtimeMs, `${file} is not older than ${entry}`);
    }
    assert.equal((await fetch(`${http}/ui/app.ts`)).status, 404, 'the sources are not served');
  });

  test('/metrics counts a call that just ran', async () => {
    const auth = { headers: { Authorization: `Bearer ${s.running.discovery.endpoint!.localToken}` } };
    assert.equal((await fetch(`${http}/metrics`)).status, 401, 'metrics need the local token');
    const before = await (await fetch(`${http}/metrics`, auth)).text();
    const count = (t: string) => Number(/aios_calls_total\{[^}]*function="diagnostics\.echo"[^}]*state="completed"[^}]*\} (\d+)/.exec(t)?.[1] ?? 0);
    await s.client.call('diagnostics.echo', { value: 1 });
    const after = await (await fetch(`${http}/metrics`, auth)).text();
    assert.equal(count(after), count(before) + 1);
  });

  test('a signed adapter dropped into a watched folder becomes callable; removing it withdraws it', async () => {
    cpSync(join(ROOT, 'examples/hello-adapter/org.example.hello'), join(adaptersDir, 'org.example.hello'), { recursive: true });
    await until(async () => ((await s.client.device(ids.device_id))['functions'] as { id: string }[]).some((f) => f.id === 'hello.greet'), 30_000, 'bridge learns hello.greet');
    const { record } = await s.client.call('hello.greet', { name: 'Ada' });
    assert.equal(record.outcome?.state, 'completed', JSON.stringify(record.outcome?.error));
    assert.match(JSON.stringify(record.outcome?.output), /Ada/);
    rmSync(join(adaptersDir, 'org.example.hello'), { recursive: true, force: true });
    await until(async () => !((await s.client.device(ids.device_id))['functions'] as { id: string }[]).some((f) => f.id === 'hello.greet'), 30_000, 'bridge forgets hello.greet');
    const gone = await s.client.call('hello.greet', { name: 'Ada' });
    assert.equal(gone.record.outcome?.error?.type, 'unknown_function');
  });

  test('an adapter renamed in one scan (same function ids, new adapter id) keeps its functions callable', async () => {
    const old = join(adaptersDir, 'org.example.hello');
    cpSync(join(ROOT, 'examples/hello-adapter/org.example.hello'), old, { recursive: true });
    await until(() => s.agent.registry.get('hello.greet') !== undefined, 30_000, 'hello.greet registered');
    // The renamed copy, signed by the same trusted publisher, is made outside the watched folder.
    const staging = join(adaptersDir, '..', 'staging-renamed');
    cpSync(old, staging, { recursive: true });
    writeFileSync(join(staging, 'tool.aios.yaml'), readFileSync(join(staging, 'tool.aios.yaml'), 'utf8').replace('id: org.example.hello', 'id: org.example.renamed'));
    writeFileSync(join(staging, 'index.mjs'), readFileSync(join(staging, 'index.mjs'), 'utf8').replace("name: 'org.example.hello'", "name: 'org.example.renamed'"));
    rmSync(join(staging, 'adapter.json'));
    await signAdapterDir(staging, await loadSigningKeyFile(join(ROOT, 'examples/hello-adapter/keys/EXAMPLE-ONLY.private.jwk.json')));
    const renamed = join(adaptersDir, 'org.example.renamed');
    try {
      renameSync(staging, renamed);
      rmSync(old, { recursive: true, force: true });
      await s.running.discovery.adapters.refresh('local');
      assert.equal(s.running.discovery.adapters.getAdapter('org.example.renamed')?.status.available, true);
      assert.equal(s.agent.registry.get('hello.greet')?.source, 'adapter:org.example.renamed');
      const { record } = await s.client.call('hello.greet', { name: 'Ada' });
      assert.equal(record.outcome?.state, 'completed', JSON.stringify(record.outcome?.error));
    } finally {
      rmSync(renamed, { recursive: true, force: true });
      await s.running.discovery.adapters.refresh('local');
    }
  });

  test('a broken card with a path for its id is listed under its folder name and creates no folder anywhere', async () => {
    const dir = join(adaptersDir, 'broken-card');
    mkdirSync(dir);
    writeFileSync(join(dir, 'adapter.json'), JSON.stringify({ adapter: { id: '../../escaped-by-adapter' } }));
    try {
      await s.running.discovery.adapters.refresh('local');
      const e = s.running.discovery.adapters.getAdapter('broken-card');
      assert.equal(e?.status.available, false);
      assert.match(e?.status.reason ?? '', /does not match its schema/);
      const dataDir = s.agent.config.data_dir;
      assert.equal(existsSync(join(dataDir, '..', 'escaped-by-adapter')), false);
      assert.equal(existsSync(join(dataDir, 'adapter-data', 'broken-card')), false, 'no data folder for code that is never loaded');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an adapter whose functions the agent refuses is listed unavailable with the reason', async () => {
    const dir = join(adaptersDir, 'org.example.slow');
    cpSync(join(ROOT, 'examples/hello-adapter/org.example.hello'), dir, { recursive: true });
    const y = readFileSync(join(dir, 'tool.aios.yaml'), 'utf8');
    // Signed by the (trusted) example publisher, but its input schema is not a JSON Schema the agent can compile.
    writeFileSync(join(dir, 'tool.aios.yaml'), y.replace('id: org.example.hello', 'id: org.example.slow').replace(/hello\.greet/g, 'slow.greet').replace('{ type: string, minLength: 1, maxLength: 100 }', '{ type: nonsense }'));
    writeFileSync(join(dir, 'index.mjs'), readFileSync(join(dir, 'index.mjs'), 'utf8').replace(/hello\.greet/g, 'slow.greet').replace("name: 'org.example.hello'", "name: 'org.example.slow'"));
    rmSync(join(dir, 'adapter.json'));
    await signAdapterDir(dir, await loadSigningKeyFile(join(ROOT, 'examples/hello-adapter/keys/EXAMPLE-ONLY.private.jwk.json')));
    try {
      await until(() => s.running.discovery.adapters.getAdapter('org.example.slow')?.status.reason !== undefined, 5000, 'the adapter is looked at');
      const e = s.running.discovery.adapters.getAdapter('org.example.slow')!;
      assert.equal(e.status.available, false);
      assert.match(e.status.reason ?? '', /its functions were refused: slow\.greet: input_schema is not a valid JSON Schema/);
      assert.equal(s.agent.registry.get('slow.greet'), undefined, 'nothing of it is callable');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a registry subscription made over the bridge session ends with that session', async () => {
    // The tray listens to the agent's status too; that must not take the session's clean-up away.
    const shell = () => undefined;
    s.agent.on('status', shell);
    after(() => void s.agent.off('status', shell));
    const first = s.bridge.hub.get(ids.device_id)!;
    await first.peer.request(METHODS.registrySubscribe, { events: ['added'] }, 5000);
    (first.peer.transport as unknown as { terminate(): void }).terminate();
    await until(() => { const c = s.bridge.hub.get(ids.device_id); return c !== undefined && c !== first; }, 10_000, 'the agent reconnects');
    await s.bridge.hub.get(ids.device_id)!.peer.request(METHODS.registrySubscribe, { events: ['added'] }, 5000);
    let announced = 0;
    const count = (_c: DeviceConnection, method: string) => void (method === METHODS.toolsChanged && announced++);
    s.bridge.hub.on('notification', count);
    try {
      cpSync(join(ROOT, 'examples/hello-adapter/org.example.hello'), join(adaptersDir, 'org.example.hello'), { recursive: true });
      await until(async () => ((await s.client.device(ids.device_id))['functions'] as { id: string }[]).some((f) => f.id === 'hello.greet'), 30_000, 'bridge learns hello.greet');
      await until(() => announced >= 2, 5000, 'both announcements');
      // Every announcement of one change is sent in the same turn; a ping answered on the same session
      // after them is a barrier, so a third (for the first session's subscription) would be counted by now.
      await s.bridge.hub.get(ids.device_id)!.peer.request(METHODS.ping, {}, 5000);
      // The agent's own tools_changed, and one for the live subscription; none for the first session's.
      assert.equal(announced, 2);
    } finally {
      s.bridge.hub.off('notification', count);
      rmSync(join(adaptersDir, 'org.example.hello'), { recursive: true, force: true });
      await until(async () => !((await s.client.device(ids.device_id))['functions'] as { id: string }[]).some((f) => f.id === 'hello.greet'), 30_000, 'bridge forgets hello.greet');
    }
  });
});

test('the bridge verifies the card from hello against the key pinned for the device, when the device is asked for', async () => {
  let pinned: JWK | null = null;
  const s = await inProcessStack({ bridgeOptions: { pinnedKey: () => pinned as never }, connect: false });
  try {
    // First connection: no pinned key → not checked (null).
    await until(() => s.bridge.hub.isOnline(ids.device_id), 10_000, 'online');
    await until(async () => (await s.client.device(ids.device_id))['adapter_card'] !== null, 5000, 'card stored');
    assert.equal((await s.client.device(ids.device_id))['adapter_card_verified'], null);
    // The device's own key pinned → verified (no new hello needed: the stored card is checked when asked).
    pinned = s.running.deviceKey.publicJwk as JWK;
    assert.equal((await s.client.device(ids.device_id))['adapter_card_verified'], true);
    // Another key pinned (a different device's) → refused, with the reason.
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    pinned = { ...(publicKey.export({ format: 'jwk' }) as JWK), kid: (s.running.deviceKey as { kid: string }).kid } as JWK;
    assert.equal((await s.client.device(ids.device_id))['adapter_card_verified'], false);
    assert.match(String((await s.client.device(ids.device_id))['adapter_card_problem']), /does not verify/);
  } finally {
    await s.stop();
  }
});
