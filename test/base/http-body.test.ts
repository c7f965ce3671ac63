/**
 * The one request-body reader (src/base/http-body.ts) on a real HTTP server: a body within the limit, one
 * over it (by Content-Length and by chunks without one), and a second read of the same request, which
 * must fail at once rather than wait for an 'end' that already happened.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BodyTooLargeError, readBody, sendJson } from '../../src/base/http-body.js';

/** A server whose handler reads the body (twice when asked) and answers what happened. */
async function withServer(fn: (url: string) => Promise<void>): Promise<void> {
  const server = http.createServer((req, res) => {
    void (async () => {
      const out: Record<string, unknown> = {};
      try {
        out['first'] = (await readBody(req, 16)).toString();
        if (req.headers['x-twice']) {
          try {
            await readBody(req, 16);
            out['second'] = 'read';
          } catch (e) {
            out['second'] = (e as Error).message;
          }
        }
      } catch (e) {
        out['error'] = e instanceof BodyTooLargeError ? `too large (${e.limit})` : (e as Error).message;
      }
      sendJson(res, 200, out);
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
}

test('readBody returns a body within its limit', async () => {
  await withServer(async (url) => {
    const r = await fetch(url, { method: 'POST', body: 'hello' });
    assert.deepEqual(await r.json(), { first: 'hello' });
  });
});

test('readBody refuses a body over its limit, by Content-Length and by streamed chunks', async () => {
  await withServer(async (url) => {
    const byLength = await fetch(url, { method: 'POST', body: 'x'.repeat(17) });
    assert.deepEqual(await byLength.json(), { error: 'too large (16)' });
    // No Content-Length: the limit is found while reading.
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('x'.repeat(10)));
        c.enqueue(new TextEncoder().encode('y'.repeat(10)));
        c.close();
      },
    });
    const chunked = await fetch(url, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    assert.deepEqual(await chunked.json(), { error: 'too large (16)' });
  });
});

test('a second readBody of the same request fails at once with a clear error', async () => {
  await withServer(async (url) => {
    const r = await fetch(url, { method: 'POST', body: 'once', headers: { 'x-twice': '1' } });
    assert.deepEqual(await r.json(), { first: 'once', second: 'the request body was already read' });
  });
});
