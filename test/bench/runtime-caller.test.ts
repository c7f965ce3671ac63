/**
 * The benchmarks' runtime client (bench/device-stack.ts `runtimeCaller`): a request that meets a kept-alive
 * socket the server is closing (ECONNRESET on a reused socket: the serial benchmark's "socket hang up" on a
 * busy machine) is sent once more with the same call_id; any other failure is reported, never retried.
 * The server here is a real HTTP server that resets the connection on the second request it reads on one
 * socket, as a bridge does that closes an idle socket while the client reuses it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { runtimeCaller, type DeviceStack } from '../../bench/device-stack.js';

async function server(onBody: (body: { call_id?: string }, socketUses: number, res: http.ServerResponse, socket: Socket) => void) {
  const uses = new WeakMap<Socket, number>();
  const s = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = (uses.get(req.socket) ?? 0) + 1;
      uses.set(req.socket, n);
      onBody(JSON.parse(Buffer.concat(chunks).toString()) as { call_id?: string }, n, res, req.socket);
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => { s.closeAllConnections(); s.close(() => r()); }) };
}

const completed = JSON.stringify({ state: 'completed', outcome: { output: { ok: true } } });

test('ECONNRESET on a reused keep-alive socket: the same call (same call_id) is sent again on a new socket', async () => {
  const ids: string[] = [];
  const srv = await server((body, n, res, socket) => {
    ids.push(body.call_id ?? '');
    // The second request on a socket finds it being closed.
    if (n === 2) return socket.resetAndDestroy();
    res.writeHead(200, { 'content-type': 'application/json' }).end(completed);
  });
  const caller = runtimeCaller({ url: srv.url, runtimeToken: 'rt_test' } as DeviceStack, 1, 'device.info', {}, (o) => (o as { ok?: boolean }).ok === true);
  try {
    await caller.call();
    await caller.call();
    assert.equal(ids.length, 3, 'the reset request was sent again');
    assert.match(ids[0]!, /^[0-9a-f-]{36}$/);
    assert.notEqual(ids[0], ids[1]);
    assert.equal(ids[1], ids[2], 'the retry carries the same call_id');
  } finally {
    caller.close();
    await srv.close();
  }
});

test('a reset on a fresh socket, or a bad answer, is reported and not retried', async () => {
  let requests = 0;
  const srv = await server((_b, _n, res, socket) => {
    requests++;
    if (requests === 1) return socket.resetAndDestroy();
    res.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'device_offline' } }));
  });
  const caller = runtimeCaller({ url: srv.url, runtimeToken: 'rt_test' } as DeviceStack, 1, 'device.info', {}, () => true);
  try {
    await assert.rejects(caller.call(), (e: NodeJS.ErrnoException) => e.code === 'ECONNRESET');
    await assert.rejects(caller.call(), /device\.info answered 409/);
    assert.equal(requests, 2);
  } finally {
    caller.close();
    await srv.close();
  }
});
