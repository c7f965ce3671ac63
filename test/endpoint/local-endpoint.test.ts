import { test, before, after } from 'node:test';
import { until } from '../helpers/wait.js';
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { WebSocket } from 'ws';
import { LocalEndpoint } from '../../src/endpoint/local-endpoint.js';
import { prepareSocketPath } from '../../src/endpoint/socket-path.js';
import { buildDeviceCard } from '../../src/discovery/card.js';
import { signCard } from '../../src/protocol/card-sign.js';
import { descriptorHash } from '../../src/protocol/hash.js';
import type { Descriptor } from '../../src/protocol/messages.js';
import { independentVerify } from '../discovery/independent-verify.js';

function descriptor(id: string, access: Descriptor['access'], capability_type: string): Descriptor {
  const d = {
    id, name: id, description: `The ${id} function.`, version: '1.0.0', capability_type, access, permission_level: 'low' as const,
    confirmation: 'never' as const, input_schema: { type: 'object' }, output_schema: { type: 'object' },
    timeout_ms_default: 1000, timeout_ms_max: 2000, cancellable: false, locks: [],
  };
  return { ...d, descriptor_hash: descriptorHash(d) };
}
const DESCRIPTORS = [
  descriptor('files.read_text', 'restricted', 'file'),
  descriptor('files.secret_notes', 'private', 'file'),
  descriptor('device.info', 'public', 'device'),
  descriptor('device.diagnostics', 'private', 'device'),
  descriptor('printer.print_document', 'restricted', 'print'),
];

let dir: string;
let ep: LocalEndpoint;
let base: string;
let socketPath: string;
let jwks: { keys: object[] };

interface Res { status: number; headers: IncomingHttpHeaders; body: string }
function http(path: string, opts: { method?: string; headers?: Record<string, string>; body?: string; socket?: boolean } = {}): Promise<Res> {
  const u = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      { ...(opts.socket ? { socketPath } : { host: u.hostname, port: u.port }), path: u.pathname + u.search, method: opts.method ?? 'GET', headers: { Host: u.host, ...opts.headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}
const auth = () => ({ Authorization: `Bearer ${ep.localToken}` });
const rpc = (method: string, params: unknown, headers: Record<string, string> = auth()) =>
  http('/rpc', { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }) });

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aios-ep-'));
  socketPath = join(dir, 'run', 'agent.sock');
  ep = new LocalEndpoint({ host: '127.0.0.1', port: 0, socketPath, dataDir: join(dir, 'data'), version: '9.9.9' });
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicJwk = { ...publicKey.export({ format: 'jwk' }), kid: 'device-key-1', alg: 'ES256' };
  jwks = { keys: [publicJwk] };
  const started = await ep.start();
  base = started.http;
  const card = await signCard(buildDeviceCard({ deviceId: 'dev_T', deviceName: 'Test PC', version: '9.9.9', http: base }, DESCRIPTORS), { kid: 'device-key-1', alg: 'ES256', privateKey, publicJwk });
  ep.setCardProvider(() => card);
  ep.setJwksProvider(() => jwks);
  ep.setDescriptorsProvider(() => DESCRIPTORS);
  ep.setHealthProvider(() => ({ bridge: 'connecting' }));
  ep.addMethods({
    'test.echo': async (params) => params,
    // Stands in for the dispatcher: a call runs, then it records into the metrics as the dispatcher does.
    'test.run_call': async (params) => {
      const t0 = performance.now();
      await new Promise((r) => setImmediate(r));
      ep.metrics.observeCall((params as { fn: string }).fn, 'completed', performance.now() - t0);
      return { ok: true };
    },
  });
});
after(async () => {
  await ep.stop();
  await rm(dir, { recursive: true, force: true });
});

test('the card served over HTTP verifies with the published JWKS using node:crypto only', async () => {
  const res = await http('/.well-known/aios-adapter.json');
  assert.equal(res.status, 200);
  const jwksRes = await http('/.well-known/jwks.json');
  assert.equal(jwksRes.status, 200);
  const card = JSON.parse(res.body) as { skills: { id: string; description: string }[] };
  assert.equal(independentVerify(card, JSON.parse(jwksRes.body)), true);
  assert.deepEqual(card.skills.map((s) => s.id).sort(), DESCRIPTORS.map((d) => d.id).sort());
  // A changed byte on the way is caught by the same independent check.
  card.skills[0]!.description += '!';
  assert.equal(independentVerify(card, JSON.parse(jwksRes.body)), false);
});

test('the card carries an ETag and Cache-Control, and a matching If-None-Match gets 304', async () => {
  const res = await http('/.well-known/aios-adapter.json');
  const etag = res.headers.etag as string;
  assert.equal(etag, `"${createHash('sha256').update(res.body).digest('base64url')}"`);
  assert.equal(res.headers['cache-control'], 'no-cache');
  const again = await http('/.well-known/aios-adapter.json', { headers: { 'If-None-Match': etag } });
  assert.equal(again.status, 304);
  assert.equal(again.body, '');
});

test('the skill index hides private skills without the token and shows them with it', async () => {
  const anon = JSON.parse((await http('/.well-known/skill-sharing')).body);
  assert.deepEqual(anon.protocol, { version: '1.0.0' });
  assert.equal(anon.provider.name, 'Test PC');
  assert.deepEqual(anon.skills.map((s: { id: string }) => s.id), ['device.info', 'files.read_text', 'printer.print_document']);
  const wrong = JSON.parse((await http('/.well-known/skill-sharing', { headers: { Authorization: 'Bearer nope' } })).body);
  assert.equal(wrong.skills.some((s: { access: string }) => s.access === 'private'), false);
  const authed = JSON.parse((await http('/.well-known/skill-sharing', { headers: auth() })).body);
  assert.equal(authed.skills.length, 5);
  assert.equal(new Set(authed.skills.map((s: { id: string }) => s.id)).size, 5, 'ids are unique');
});

test('?type=X returns exactly the visible skills of that type', async () => {
  const anon = JSON.parse((await http('/.well-known/skill-sharing?type=file')).body);
  assert.deepEqual(anon.skills.map((s: { id: string }) => s.id), ['files.read_text']);
  const authed = JSON.parse((await http('/.well-known/skill-sharing?type=file', { headers: auth() })).body);
  assert.deepEqual(authed.skills.map((s: { id: string }) => s.id), ['files.read_text', 'files.secret_notes']);
  const none = JSON.parse((await http('/.well-known/skill-sharing?type=camera', { headers: auth() })).body);
  assert.deepEqual(none.skills, []);
});

test('descriptor_url resolves to the full descriptor; a private one is not found without the token', async () => {
  const index = JSON.parse((await http('/.well-known/skill-sharing', { headers: auth() })).body);
  const entry = index.skills.find((s: { id: string }) => s.id === 'files.secret_notes');
  const path = new URL(entry.descriptor_url).pathname;
  assert.equal((await http(path)).status, 404);
  const full = await http(path, { headers: auth() });
  assert.equal(full.status, 200);
  assert.deepEqual(JSON.parse(full.body), DESCRIPTORS[1]);
  const pub = await http('/skills/device.info/descriptor.json');
  assert.equal(JSON.parse(pub.body).descriptor_hash, DESCRIPTORS[2]?.descriptor_hash);
});

test('a foreign Host header is refused on every route, including the WebSocket upgrade', async () => {
  for (const path of ['/health', '/.well-known/aios-adapter.json', '/.well-known/skill-sharing', '/rpc', '/metrics']) {
    const res = await http(path, { headers: { Host: 'attacker.example:9527', ...auth() } });
    assert.equal(res.status, 403, path);
  }
  assert.equal((await http('/health', { headers: { Host: 'localhost:1' } })).status, 200);
  await assert.rejects(
    new Promise((resolve, reject) => {
      const ws = new WebSocket(`${base.replace('http', 'ws')}/rpc`, { headers: { Host: 'rebind.attacker.example', ...auth() } });
      ws.on('open', resolve);
      ws.on('error', reject);
    }),
    /403/,
  );
});

test('no permissive CORS: no Access-Control-* headers, and a foreign Origin cannot use /rpc', async () => {
  const res = await http('/.well-known/skill-sharing', { headers: { Origin: 'https://evil.example' } });
  assert.equal(Object.keys(res.headers).some((h) => h.startsWith('access-control-')), false);
  const pre = await http('/rpc', { method: 'OPTIONS', headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' } });
  assert.equal(Object.keys(pre.headers).some((h) => h.startsWith('access-control-')), false);
  const post = await rpc('test.echo', {}, { ...auth(), Origin: 'https://evil.example' });
  assert.equal(post.status, 403);
  const form = await http('/rpc', { method: 'POST', headers: { ...auth(), 'Content-Type': 'text/plain' }, body: '{}' });
  assert.equal(form.status, 415);
});

test('a wrong method is 405 method_not_allowed (not unauthorized); an undecodable skill id is 404', async () => {
  for (const [path, method] of [['/rpc', 'PUT'], ['/health', 'DELETE']] as const) {
    const res = await http(path, { method, headers: auth() });
    assert.equal(res.status, 405, path);
    assert.equal((JSON.parse(res.body) as { error: { type: string } }).error.type, 'method_not_allowed');
  }
  const bad = await http('/skills/%E0/descriptor.json');
  assert.equal(bad.status, 404);
  assert.equal((JSON.parse(bad.body) as { error: { type: string; code: number } }).error.type, 'unknown_function');
});

test('/health answers without the token; /metrics and /rpc need it', async () => {
  const h = await http('/health');
  assert.deepEqual(JSON.parse(h.body), { status: 'ok', bridge: 'connecting', version: '9.9.9' });
  assert.equal((await http('/metrics')).status, 401);
  const r = await rpc('test.echo', { a: 1 }, {});
  assert.equal(r.status, 401);
  const ok = await rpc('test.echo', { a: 1 });
  assert.deepEqual(JSON.parse(ok.body), { jsonrpc: '2.0', id: 7, result: { a: 1 } });
  const missing = JSON.parse((await rpc('no.such', {})).body);
  assert.equal(missing.error.code, -32601);
});

test('/metrics counts a call that just ran, with its latency in the histogram', async () => {
  const before = (await http('/metrics', { headers: auth() })).body;
  assert.equal(before.includes('function="demo.echo"'), false);
  await rpc('test.run_call', { fn: 'demo.echo' });
  const res = await http('/metrics', { headers: auth() });
  assert.match(res.headers['content-type'] as string, /^text\/plain; version=0\.0\.4/);
  assert.match(res.body, /^aios_calls_total\{function="demo\.echo",state="completed"\} 1$/m);
  assert.match(res.body, /^aios_call_duration_seconds_count\{function="demo\.echo"\} 1$/m);
  assert.match(res.body, /^aios_call_duration_seconds_bucket\{function="demo\.echo",le="\+Inf"\} 1$/m);
  assert.match(res.body, /^# TYPE aios_call_duration_seconds histogram$/m);
  ep.metrics.incConfirmation('allowed');
  ep.metrics.incReconnect();
  const again = (await http('/metrics', { headers: auth() })).body;
  assert.match(again, /^aios_confirmations_total\{decision="allowed"\} 1$/m);
  assert.match(again, /^aios_bridge_reconnects_total 1$/m);
});

test('WS /rpc: authenticated clients call methods and receive broadcasts; without the token the upgrade is refused', async () => {
  const url = `${base.replace('http', 'ws')}/rpc`;
  await assert.rejects(new Promise((res, rej) => { const w = new WebSocket(url); w.on('open', res); w.on('error', rej); }), /401/);
  // A browser cannot set headers: it offers the token as a subprotocol.
  const ws = new WebSocket(url, ['aios-local.v1', `bearer.${ep.localToken}`]);
  await new Promise((res, rej) => { ws.on('open', res); ws.on('error', rej); });
  assert.equal(ws.protocol, 'aios-local.v1');
  const messages: { id?: number; method?: string }[] = [];
  ws.on('message', (d) => messages.push(JSON.parse(String(d)) as (typeof messages)[number]));
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'test.echo', params: { x: 1 } }));
  await until(() => messages.length >= 1);
  assert.deepEqual(messages[0], { jsonrpc: '2.0', id: 1, result: { x: 1 } });
  ep.broadcast('aios/notification.tools_changed', { revision: 3, added: [], removed: [], updated: [] });
  await until(() => messages.length >= 2);
  assert.equal(messages[1]?.method, 'aios/notification.tools_changed');
  ws.close();
});

test('the Unix socket is 0600 and needs the token like TCP does (issue 35); the token file is 0600', async () => {
  assert.equal((await stat(socketPath)).mode & 0o777, 0o600);
  assert.equal((await stat(join(dir, 'data', 'local-token'))).mode & 0o777, 0o600);
  const anonymous = await http('/metrics', { socket: true, headers: { Host: 'localhost' } });
  assert.equal(anonymous.status, 401, 'reaching the socket is not enough');
  const rpc = await http('/rpc', { socket: true, method: 'POST', headers: { Host: 'localhost', 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'control.grants.add', params: {} }) });
  assert.ok(rpc.status === 401 || (/"error"/.test(rpc.body) && !/"result"/.test(rpc.body)), `control methods are refused without the token: ${rpc.status} ${rpc.body}`);
  const res = await http('/metrics', { socket: true, headers: { Host: 'localhost', ...auth() } });
  assert.equal(res.status, 200);
  const foreign = await http('/health', { socket: true, headers: { Host: 'evil.example' } });
  assert.equal(foreign.status, 403);
});

test('the socket\'s folder is 0700, and a folder others can write to is refused with the reason', async () => {
  assert.equal((await stat(dirname(socketPath))).mode & 0o777, 0o700);
  const open = join(dir, 'shared');
  await mkdir(open);
  await chmod(open, 0o777);
  await assert.rejects(prepareSocketPath(join(open, 'agent.sock')), /can be written by other users \(mode 777\)/);
  await symlink(join(dir, 'run'), join(dir, 'link'));
  await assert.rejects(prepareSocketPath(join(dir, 'link', 'agent.sock')), /is not a folder/);
});

test('a taken port moves the endpoint to the next free one; a second agent on the same socket is refused', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
  const port = (blocker.address() as { port: number }).port;
  const other = new LocalEndpoint({ port, socketPath: null, dataDir: join(dir, 'data2'), version: '1' });
  try {
    const info = await other.start();
    assert.notEqual(new URL(info.http).port, String(port));
    assert.ok(Number(new URL(info.http).port) > port);
  } finally {
    await other.stop();
    blocker.close();
  }
  const clash = new LocalEndpoint({ port: 0, socketPath, dataDir: join(dir, 'data3'), version: '1' });
  await assert.rejects(clash.start(), /already listening/);
  await clash.stop();
});

