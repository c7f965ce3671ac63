import { test, before, after } from 'node:test';
import { until, slow } from '../helpers/wait.js';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { exportJWK, FlattenedSign, generateKeyPair, type JWK } from 'jose';
import { AdapterRegistry } from '../../src/discovery/registry.js';
import type { RegistryChange } from '../../src/discovery/adapter-entry.js';
import { TrustStore } from '../../src/discovery/trust-store.js';
import { signCard, signingPayload } from '../../src/protocol/card-sign.js';
import { fetchRemoteCard } from '../../src/discovery/remote-adapter.js';
import { WireError } from '../../src/protocol/errors.js';
import type { CallContext } from '../../src/sdk/index.js';
import { standaloneTemp } from '../../src/sdk/temp.js';

const run = promisify(execFile);
let dir: string;
let ca: Buffer;
let server: Server;
let origin: string;
/** A JSON-RPC request the site's /rpc received: the fields the site answers from and the tests read. */
interface InvokeRequest {
  id: number | string;
  method: string;
  params: { function: string; call_id: string; arguments: { text?: string } };
}

const state: { card: unknown; jwks: unknown; attackerJwks: unknown; calls: InvokeRequest[] } = { card: null, jwks: null, attackerJwks: null, calls: [] };
let siteKey: Awaited<ReturnType<typeof key>>;

async function key(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { kid, alg: 'ES256' as const, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256' } as JWK };
}

function baseCard(protocol_version = '1.0') {
  return {
    adapter: { id: 'com.example.remote', name: 'Remote echo', version: '2.0.0', protocol_version },
    capabilities: { async_tasks: true },
    skills: [
      { id: 'remote.echo', name: 'Echo remotely', permission_level: 'low', capability_type: 'api', input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false } },
      { id: 'remote.fail', name: 'Always offline', permission_level: 'low' },
    ],
    endpoints: { rpc: '/rpc', health: '/health' },
  };
}

function ctx(callId: string): CallContext {
  const log = { debug() {}, info() {}, warn() {}, error() {}, child: () => log };
  return { callId, functionId: 'remote.echo', signal: new AbortController().signal, requester: undefined, log, blobs: {} as never, progress() {}, commit() {}, resources: [], ...standaloneTemp() };
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aios-remote-'));
  // A throwaway self-signed certificate for 127.0.0.1; the client is told to trust it through `ca`.
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1']);
  ca = await readFile(join(dir, 'cert.pem'));
  siteKey = await key('site-key-1');
  state.jwks = { keys: [siteKey.publicJwk] };
  state.card = await signCard(baseCard(), siteKey);
  server = createServer({ key: await readFile(join(dir, 'key.pem')), cert: ca }, (req, res) => {
    const send = (status: number, v: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    if (req.url === '/.well-known/aios-adapter.json') return send(200, state.card);
    if (req.url === '/.well-known/jwks.json') return state.jwks ? send(200, state.jwks) : send(404, {});
    if (req.url === '/attacker/jwks.json') return send(200, state.attackerJwks);
    if (req.url === '/rpc' && req.method === 'POST') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const msg = JSON.parse(Buffer.concat(chunks).toString('utf8')) as InvokeRequest;
        state.calls.push(msg);
        const p = msg.params;
        if (p.function === 'remote.echo') return send(200, { jsonrpc: '2.0', id: msg.id, result: { call_id: p.call_id, function: p.function, state: 'completed', output: { echo: p.arguments.text }, error: null } });
        return send(200, { jsonrpc: '2.0', id: msg.id, result: { call_id: p.call_id, function: p.function, state: 'failed', error: { code: -41020, type: 'device_unavailable', message: 'The lab instrument is off.', retryable: true, side_effects: 'none' } } });
      });
      return;
    }
    send(404, {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await rm(dir, { recursive: true, force: true });
});

test('adapters add: the card verifies against the origin JWKS, its skills are registered and called through endpoints.rpc', async () => {
  const reg = new AdapterRegistry({ dirs: [], desktopDirs: [], trust: TrustStore.of([]), dataDir: join(dir, 'data'), remoteCa: ca, watch: false });
  await reg.start();
  await reg.remoteReady;
  const changed = new Promise<RegistryChange>((r) => reg.once('changed', r));
  const e = await reg.addRemote(origin);
  assert.deepEqual((await changed).added.map((f) => f.id), ['remote.echo', 'remote.fail']);
  assert.equal(e.status.available, true);
  assert.equal(e.kind, 'remote');
  const echo = reg.functions().find((f) => f.descriptor.id === 'remote.echo');
  assert.ok(echo);
  // Pessimistic defaults for what the remote card left out.
  assert.equal(echo.descriptor.access, 'restricted');
  assert.equal(echo.descriptor.risk, undefined);
  assert.deepEqual(await echo.run({ text: 'hi' } as never, ctx('call-1')), { echo: 'hi' });
  assert.equal(state.calls.at(-1)?.method, 'aios/function.invoke');
  assert.equal(state.calls.at(-1)?.params.call_id, 'call-1');
  const fail = reg.functions().find((f) => f.descriptor.id === 'remote.fail');
  await assert.rejects(fail!.run({} as never, ctx('call-2')), (err: unknown) => err instanceof WireError && err.type === 'device_unavailable');
  await reg.stop();

  // Remembered across restarts.
  const again = new AdapterRegistry({ dirs: [], desktopDirs: [], trust: TrustStore.of([]), dataDir: join(dir, 'data'), remoteCa: ca, watch: false });
  await again.start();
  await again.remoteReady; // fetched in the background, after start
  assert.equal(again.getAdapter('com.example.remote')?.status.available, true);
  assert.equal(await again.removeRemote('com.example.remote'), true);
  assert.equal(again.functions().length, 0);
  await again.stop();
});

test('a remote certificate the client was not told to trust is refused', async () => {
  await assert.rejects(fetchRemoteCard(origin, { trust: TrustStore.of([]) }), /could not be fetched/);
});

test('a card signed by a key neither the origin nor the trust store holds is refused, even with a jku header', async () => {
  const attacker = await key('site-key-1');
  state.attackerJwks = { keys: [attacker.publicJwk] };
  const jws = await new FlattenedSign(signingPayload(baseCard()))
    .setProtectedHeader({ alg: 'ES256', kid: 'site-key-1', typ: 'aios-adapter+jws', jku: `${origin}/attacker/jwks.json` })
    .sign(attacker.privateKey);
  const saved = state.card;
  state.card = { ...baseCard(), signature: { algorithm: 'ES256', key_id: 'site-key-1', value: `${jws.protected}..${jws.signature}` } };
  try {
    await assert.rejects(fetchRemoteCard(origin, { trust: TrustStore.of([]), ca }), /does not verify/);
  } finally {
    state.card = saved;
  }
});

test('the trust store is enough when the origin publishes no JWKS; an incompatible protocol version is refused', async () => {
  const savedJwks = state.jwks;
  state.jwks = null;
  try {
    await assert.rejects(fetchRemoteCard(origin, { trust: TrustStore.of([]), ca }), /could not be fetched/);
    const r = await fetchRemoteCard(origin, { trust: TrustStore.of([siteKey.publicJwk]), ca });
    assert.equal(r.keySource, 'trust-store');
    assert.equal(r.rpcUrl, `${origin}/rpc`);
  } finally {
    state.jwks = savedJwks;
  }
  const saved = state.card;
  state.card = await signCard(baseCard('2.0'), siteKey);
  try {
    await assert.rejects(fetchRemoteCard(origin, { trust: TrustStore.of([]), ca }), /speaks protocol 2\.0/);
  } finally {
    state.card = saved;
  }
  await assert.rejects(fetchRemoteCard(origin.replace('https', 'http'), { trust: TrustStore.of([]), ca }), /https/);
});

test('CLI: adapter verify <url> and adapters add <url> with --ca', async () => {
  const cli = ['--import', 'tsx', new URL('./cli-runner.ts', import.meta.url).pathname];
  const caFile = join(dir, 'cert.pem');
  const v = await run(process.execPath, [...cli, 'adapter', 'verify', origin, '--ca', caFile, '--data-dir', join(dir, 'cli-data')]);
  assert.match(v.stdout, /✓ com\.example\.remote 2\.0\.0: signature by site-key-1 \(origin-jwks\), 2 skills/);
  const a = await run(process.execPath, [...cli, 'adapters', 'add', origin, '--ca', caFile, '--data-dir', join(dir, 'cli-data')]);
  assert.match(a.stdout, /✓ added com\.example\.remote \(2 skills\)/);
  const stored = JSON.parse(await readFile(join(dir, 'cli-data', 'remote-adapters.json'), 'utf8'));
  assert.equal(stored.adapters[0].url, `${origin}/.well-known/aios-adapter.json`);
  // The CA is kept with the adapter: a later listing (or the agent's next start) fetches it again with that CA.
  assert.match(stored.adapters[0].ca, /BEGIN CERTIFICATE/);
  const l = await run(process.execPath, [...cli, 'adapters', 'list', '--data-dir', join(dir, 'cli-data')]);
  assert.match(l.stdout, /✓ com\.example\.remote 2\.0\.0 {2}Remote echo/);
  assert.match(a.stdout, /no agent runs with .*: it loads the adapter when it starts/);
  await assert.rejects(run(process.execPath, [...cli, 'adapter', 'verify', origin, '--data-dir', join(dir, 'cli-data')]), { code: 1, stderr: /✗/ });
});

test('an unreachable remote adapter does not hold up start(): it is fetched in the background and shown unavailable', async () => {
  // A TLS port that accepts and never answers: the fetch waits for its timeout.
  const { createServer: tcp } = await import('node:net');
  const held: import('node:net').Socket[] = [];
  const silent = tcp((s) => void held.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const url = `https://127.0.0.1:${(silent.address() as import('node:net').AddressInfo).port}`;
  const data = join(dir, 'data-silent');
  await import('node:fs/promises').then((fs) => fs.mkdir(data, { recursive: true }).then(() => fs.writeFile(join(data, 'remote-adapters.json'), JSON.stringify({ adapters: [{ url, id: 'com.example.silent', name: 'Silent', added_at: new Date().toISOString() }] }))));
  const reg = new AdapterRegistry({ dirs: [], desktopDirs: [], trust: TrustStore.of([]), dataDir: data, remoteCa: ca, watch: false });
  try {
    await reg.start();
    await until(() => held.length, 10_000, 'the fetch to reach the silent origin');
    assert.equal(held.length, 1, 'the fetch is waiting on the silent origin');
    assert.equal(reg.getAdapter('com.example.silent'), undefined, 'start() returned before the remote answered');
    for (const s of held) s.destroy();
    await reg.remoteReady;
    assert.equal(reg.getAdapter('com.example.silent')?.status.available, false);
  } finally {
    await reg.stop();
    await new Promise((r) => silent.close(r));
  }
});

test('a silent remote origin neither holds up a local rescan nor stop()', { timeout: slow(8000) }, async () => {
  // The fetch would wait 10 s for the silent origin; the test's 8 s budget fails if anything waits for it.
  const { createServer: tcp } = await import('node:net');
  const held: import('node:net').Socket[] = [];
  const silent = tcp((s) => void held.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const url = `https://127.0.0.1:${(silent.address() as import('node:net').AddressInfo).port}`;
  const fs = await import('node:fs/promises');
  const data = join(dir, 'data-silent-2');
  const adapters = join(dir, 'adapters-silent-2');
  await fs.mkdir(data, { recursive: true });
  await fs.mkdir(adapters, { recursive: true });
  await fs.writeFile(join(data, 'remote-adapters.json'), JSON.stringify({ adapters: [{ url, id: 'com.example.silent', name: 'Silent', added_at: new Date().toISOString() }] }));
  const reg = new AdapterRegistry({ dirs: [adapters], desktopDirs: [], trust: TrustStore.of([]), dataDir: data, remoteCa: ca, watch: false });
  let remoteSettled = false;
  try {
    await reg.start();
    void reg.remoteReady.then(() => (remoteSettled = true));
    await until(() => held.length, 10_000, 'the fetch to reach the silent origin');
    // A local adapter appears; its rescan finishes while the remote fetch still waits.
    await fs.mkdir(join(adapters, 'com.example.local'));
    await fs.writeFile(join(adapters, 'com.example.local', 'tool.aios.yaml'), 'id: com.example.local\nname: Local one\nversion: 1.0.0\n');
    await reg.refresh('local');
    assert.equal(remoteSettled, false, 'the remote fetch is still waiting');
    assert.ok(reg.getAdapter('com.example.local'), 'the local rescan was applied');
    await reg.stop();
    assert.equal(reg.getAdapter('com.example.silent'), undefined, 'an abandoned fetch is not applied');
  } finally {
    await reg.stop();
    for (const s of held) s.destroy();
    await new Promise((r) => silent.close(r));
  }
});

test('edits of the stored remote list are kept when they overlap, and a damaged list is reported, never overwritten', async () => {
  const data = join(dir, 'data-edits');
  const fs = await import('node:fs/promises');
  await fs.mkdir(data, { recursive: true });
  const file = join(data, 'remote-adapters.json');
  const rec = (id: string) => ({ url: 'https://127.0.0.1:1/.well-known/aios-adapter.json', id, name: id, added_at: new Date().toISOString() });
  await fs.writeFile(file, JSON.stringify({ adapters: [rec('com.example.a'), rec('com.example.b'), rec('com.example.c')] }));
  const reg = new AdapterRegistry({ dirs: [], desktopDirs: [], trust: TrustStore.of([siteKey.publicJwk]), dataDir: data, remoteCa: ca, watch: false });
  try {
    // Both removals read the list before either writes it: each must see the other's result.
    assert.deepEqual(await Promise.all([reg.removeRemote('com.example.a'), reg.removeRemote('com.example.b')]), [true, true]);
    assert.deepEqual(JSON.parse(await readFile(file, 'utf8')).adapters.map((r: { id: string }) => r.id), ['com.example.c']);
    await fs.writeFile(file, '{"adapters": [');
    await assert.rejects(reg.addRemote(origin), /remote adapters .*remote-adapters\.json is not valid/);
    await assert.rejects(reg.removeRemote('com.example.c'), /is not valid/);
    assert.equal(await readFile(file, 'utf8'), '{"adapters": [', 'the damaged file is left for the user');
  } finally {
    await reg.stop();
  }
});
