/** JSON-RPC peer over the in-memory linked pair: correlation, timeouts, envelope errors, gate. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLinkedPair } from '../../src/protocol/transport.js';
import { JsonRpcPeer, PreSerialized, RequestTimeoutError, ConnectionClosedError } from '../../src/protocol/peer.js';
import { RpcError, WireError } from '../../src/protocol/errors.js';

function pair(gate?: (m: string) => void) {
  const [a, b] = createLinkedPair();
  return { client: new JsonRpcPeer(a), server: new JsonRpcPeer(b, gate ? { gate } : {}), a, b };
}

test('requests are correlated by id, out of order', async () => {
  const { client, server } = pair();
  // 'slow' is asked first and answers only after 'fast' has been answered: out of order, by construction.
  let release!: () => void;
  const fastAnswered = new Promise<void>((r) => (release = r));
  const answered: string[] = [];
  server.onRequest('slow', async () => {
    await fastAnswered;
    return 'slow';
  });
  server.onRequest('fast', () => 'fast');
  const slow = client.request('slow').then((v) => (answered.push('slow'), v));
  const fast = client.request('fast').then((v) => (answered.push('fast'), release(), v));
  const [s, f] = await Promise.all([slow, fast]);
  assert.equal(s, 'slow');
  assert.equal(f, 'fast');
  assert.deepEqual(answered, ['fast', 'slow']);
});

test('method not found is -32601; malformed params of a protocol method are -32602 with pointers', async () => {
  const { client, server } = pair();
  server.onRequest('aios/function.cancel', () => ({}));
  await assert.rejects(client.request('nope'), (e: unknown) => e instanceof RpcError && e.code === -32601);
  await assert.rejects(client.request('aios/function.cancel', { call_id: 'bad id with spaces' }), (e: unknown) => {
    assert.ok(e instanceof RpcError);
    assert.equal(e.code, -32602);
    assert.equal((e.data as { violations: { pointer: string }[] }).violations[0]?.pointer, '/call_id');
    return true;
  });
});

test('protocol errors cross the wire as WireError with type and retryable', async () => {
  const { client } = pair(() => {
    throw new WireError('not_ready', 'hello first');
  });
  await assert.rejects(client.request('anything'), (e: unknown) => e instanceof WireError && e.type === 'not_ready' && e.retryable === true && e.code === -41060);
});

test('a request times out; a late answer is ignored', async () => {
  const { client, server } = pair();
  server.onRequest('never', () => new Promise(() => undefined));
  await assert.rejects(client.request('never', undefined, 50), RequestTimeoutError);
});

test('parse errors and invalid requests get the standard codes', async () => {
  const [a, b] = createLinkedPair();
  new JsonRpcPeer(b);
  const got: string[] = [];
  let allThree!: () => void;
  const answered = new Promise<void>((r) => (allThree = r));
  a.onmessage = (t) => {
    got.push(t);
    if (got.length === 3) allThree();
  };
  a.send('{oops');
  a.send(JSON.stringify({ jsonrpc: '1.0', id: 5, method: 'x' }));
  a.send(JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'x' }]));
  await answered;
  const codes = got.map((t) => (JSON.parse(t) as { error: { code: number } }).error.code);
  assert.deepEqual(codes, [-32700, -32600, -32600]);
});

test('pending requests fail with ConnectionClosedError when the transport closes', async () => {
  const { client, server, a } = pair();
  server.onRequest('hang', () => new Promise(() => undefined));
  const p = client.request('hang');
  a.close(1006, 'gone');
  await assert.rejects(p, ConnectionClosedError);
  assert.equal(client.isOpen, false);
});

test('an unexpected handler exception is an internal error without its message', async () => {
  const { client, server } = pair();
  server.onRequest('boom', () => {
    throw new Error('secret path /home/u/x');
  });
  await assert.rejects(client.request('boom'), (e: unknown) => e instanceof RpcError && e.code === -32603 && !e.message.includes('secret'));
});

test('a PreSerialized result goes out as its JSON text, spliced in unchanged; size limits still apply', async () => {
  const [a, b] = createLinkedPair();
  const client = new JsonRpcPeer(a);
  const server = new JsonRpcPeer(b, { maxMessageBytes: 200 });
  const frames: string[] = [];
  const send = b.send.bind(b);
  b.send = (text) => (frames.push(text), send(text));
  // Spacing JSON.stringify never makes: the frame shows whether the text was spliced or re-serialized.
  server.onRequest('made', () => new PreSerialized({ a: 1 }, '{"a": 1}'));
  server.onRequest('big', () => new PreSerialized({ s: 'x'.repeat(300) }, JSON.stringify({ s: 'x'.repeat(300) })));
  assert.deepEqual(await client.request('made'), { a: 1 });
  assert.ok(frames.some((f) => f.endsWith('"result":{"a": 1}}')), frames.join('\n'));
  await assert.rejects(client.request('big'), (e: unknown) => e instanceof WireError && e.type === 'payload_too_large');
});
