/**
 * The local endpoint's `/rpc` runs on JsonRpcPeer, the bridge session's JSON-RPC implementation: the
 * same envelope errors (checked here against a peer on an in-memory pair), the auth gate for methods that
 * are not public, notifications over plain HTTP, and methods added while a WebSocket is open.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { LocalEndpoint, LOCAL_RPC_SUBPROTOCOL } from '../../src/endpoint/local-endpoint.js';
import { JsonRpcPeer } from '../../src/protocol/peer.js';
import { createLinkedPair } from '../../src/protocol/transport.js';
import { ERRORS, RPC } from '../../src/protocol/errors.js';

let dir: string;
let ep: LocalEndpoint;
let base: string;
let notified = 0;
let noticeSeen: () => void = () => undefined;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aios-rpc-peer-'));
  ep = new LocalEndpoint({ host: '127.0.0.1', port: 0, socketPath: null, dataDir: join(dir, 'data'), version: '1.0.0' });
  base = (await ep.start()).http;
  ep.addMethods({ 'test.private': async (p) => ({ got: p }), 'test.crash': async () => { throw new Error('secret detail'); } });
  ep.addMethods({
    'test.public': async () => ({ open: true }),
    'test.notice': async () => {
      notified++;
      noticeSeen();
      return null;
    },
  }, { public: true });
});
after(async () => {
  await ep.stop();
  await rm(dir, { recursive: true, force: true });
});

async function post(body: string, token = true): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${base}/rpc`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${ep.localToken}` } : {}) }, body });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** What the bridge session's peer answers to the same frame. */
async function sessionAnswer(frame: string): Promise<unknown> {
  const [a, b] = createLinkedPair();
  new JsonRpcPeer(a, {});
  const got = new Promise<string>((resolve) => (b.onmessage = resolve));
  b.send(frame);
  return JSON.parse(await got);
}

test('envelope errors over POST /rpc are exactly those of the session peer', async () => {
  const frames = ['{not json', '[]', '[{"jsonrpc":"2.0","id":1,"method":"test.private"}]', '{"jsonrpc":"1.0","id":1,"method":"x"}', '{"jsonrpc":"2.0","id":{},"method":"x"}', '{"jsonrpc":"2.0","id":3,"method":"no.such"}'];
  for (const f of frames) {
    const r = await post(f);
    assert.equal(r.status, 200, f);
    assert.deepEqual(r.json, await sessionAnswer(f), `POST /rpc and the session differ on ${f}`);
  }
  const codes = await Promise.all(frames.map(async (f) => ((await post(f)).json as { error: { code: number } }).error.code));
  assert.deepEqual(codes, [RPC.parse_error, RPC.invalid_request, RPC.invalid_request, RPC.invalid_request, RPC.invalid_request, RPC.method_not_found]);
});

test('without the token: a public method answers, a private one is 401 unauthorized, an unknown one is -32601', async () => {
  const pub = await post('{"jsonrpc":"2.0","id":1,"method":"test.public"}', false);
  assert.deepEqual(pub, { status: 200, json: { jsonrpc: '2.0', id: 1, result: { open: true } } });
  const priv = await post('{"jsonrpc":"2.0","id":2,"method":"test.private","params":{"a":1}}', false);
  assert.equal(priv.status, 401);
  const err = (priv.json as { error: { code: number; data: { type: string } } }).error;
  assert.equal(err.code, ERRORS.unauthorized.code);
  assert.equal(err.data.type, 'unauthorized');
  const unknown = await post('{"jsonrpc":"2.0","id":3,"method":"no.such"}', false);
  assert.equal(unknown.status, 200);
  assert.equal((unknown.json as { error: { code: number } }).error.code, RPC.method_not_found);
  const withToken = await post('{"jsonrpc":"2.0","id":4,"method":"test.private","params":{"a":1}}');
  assert.deepEqual(withToken.json, { jsonrpc: '2.0', id: 4, result: { got: { a: 1 } } });
});

test('a crashing method is -32603 without its message; a notification over POST is 204 and still runs', async () => {
  const crash = await post('{"jsonrpc":"2.0","id":5,"method":"test.crash"}');
  assert.deepEqual(crash.json, { jsonrpc: '2.0', id: 5, error: { code: RPC.internal_error, message: 'Internal error.' } });
  const before = notified;
  const seen = new Promise<void>((r) => (noticeSeen = r));
  const note = await post('{"jsonrpc":"2.0","method":"test.notice"}');
  assert.equal(note.status, 204);
  assert.equal(note.json, undefined);
  await seen;
  assert.equal(notified, before + 1);
});

test('WS /rpc: a method added after the connection opened is served on it; broadcasts arrive', async () => {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/rpc`, LOCAL_RPC_SUBPROTOCOL, { headers: { Authorization: `Bearer ${ep.localToken}` } });
  await once(ws, 'open');
  const next = () => once(ws, 'message').then(([d]) => JSON.parse(String(d)) as Record<string, unknown>);
  ws.send('{"jsonrpc":"2.0","id":1,"method":"test.late"}');
  assert.equal(((await next()).error as { code: number }).code, RPC.method_not_found);
  ep.addMethods({ 'test.late': async () => 'here now' });
  ws.send('{"jsonrpc":"2.0","id":2,"method":"test.late"}');
  assert.deepEqual(await next(), { jsonrpc: '2.0', id: 2, result: 'here now' });
  const note = next();
  ep.broadcast('test.event', { n: 1 });
  assert.deepEqual(await note, { jsonrpc: '2.0', method: 'test.event', params: { n: 1 } });
  ws.close();
  await once(ws, 'close');
});
