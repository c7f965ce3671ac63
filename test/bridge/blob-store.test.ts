/** The bridge's blob store over real HTTP on port 0: upload, download, limits, expiry, scoping. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { BlobStore } from '../../src/bridge/blob-store.js';

let dir: string;
let now = 1_000_000;
let store: BlobStore;
let server: http.Server;
let base: string;

before(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'aios-blobs-'));
  store = new BlobStore({ dir, maxBytes: 1024 * 1024, ttlMs: 60_000, now: () => now });
  server = http.createServer((req, res) => {
    const { pathname } = new URL(req.url ?? '/', 'http://x');
    const scope = req.headers['x-test-scope'] as string | undefined;
    void store.handleHttp(req, res, pathname, scope).then((h) => {
      if (!h) res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await fs.promises.rm(dir, { recursive: true, force: true });
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

test('PUT then GET returns the same bytes with their reference', async () => {
  const body = Buffer.from('hello blob');
  const put = await fetch(`${base}/v1/blobs`, { method: 'PUT', body, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  assert.equal(put.status, 201);
  const ref = (await put.json()) as { blob_id: string; sha256: string; size: number; media_type: string };
  assert.deepEqual({ size: ref.size, sha256: ref.sha256, media_type: ref.media_type }, { size: body.length, sha256: sha(body), media_type: 'text/plain' });
  const get = await fetch(`${base}/v1/blobs/${ref.blob_id}`);
  assert.equal(get.status, 200);
  assert.equal(get.headers.get('content-type'), 'text/plain');
  assert.deepEqual(Buffer.from(await get.arrayBuffer()), body);
});

test('too large: 413 with the error body, nothing stored', async () => {
  const before = fs.readdirSync(dir).length;
  const res = await fetch(`${base}/v1/blobs`, { method: 'PUT', body: Buffer.alloc(1024 * 1024 + 1) });
  assert.equal(res.status, 413);
  const body = (await res.json()) as { error: { type: string; code: number; retryable: boolean; message: string } };
  assert.equal(body.error.type, 'payload_too_large');
  assert.equal(body.error.code, -41054);
  assert.equal(body.error.retryable, false);
  await assert.rejects(store.put(Readable.from([Buffer.alloc(700 * 1024), Buffer.alloc(700 * 1024)]), 'application/octet-stream'), { type: 'payload_too_large' });
  assert.equal(fs.readdirSync(dir).length, before);
  assert.deepEqual(fs.readdirSync(path.join(dir, 'tmp')), []);
});

test('unknown and malformed ids are 404 and never reach the file system', async () => {
  for (const id of ['b_nope', '..%2F..%2Fetc%2Fpasswd', 'x.json', '%00', '%E0', 'b_%ZZ']) {
    const res = await fetch(`${base}/v1/blobs/${id}`);
    assert.equal(res.status, 404);
    const body = (await res.json()) as { error: { type: string } };
    assert.equal(body.error.type, 'invalid_arguments');
  }
});

test('blobs expire, and sweep removes their files', async () => {
  const ref = await store.put(Readable.from([Buffer.from('short-lived')]), 'text/plain');
  assert.ok(await store.open(ref.blob_id).then((o) => (o?.stream.destroy(), o !== null)));
  now += 60_001;
  assert.equal((await fetch(`${base}/v1/blobs/${ref.blob_id}`)).status, 404);
  const ref2 = await store.put(Readable.from([Buffer.from('x')]), 'text/plain');
  now += 60_001;
  assert.ok((await store.sweep()) >= 1);
  assert.ok(!fs.readdirSync(dir).some((n) => n.startsWith(ref2.blob_id)));
});

test('a blob uploaded in one scope cannot be read from another', async () => {
  const put = await fetch(`${base}/v1/blobs`, { method: 'PUT', body: 'ws-a data', headers: { 'x-test-scope': 'ws_a' } });
  const ref = (await put.json()) as { blob_id: string };
  assert.equal((await fetch(`${base}/v1/blobs/${ref.blob_id}`, { headers: { 'x-test-scope': 'ws_b' } })).status, 404);
  assert.equal((await fetch(`${base}/v1/blobs/${ref.blob_id}`, { headers: { 'x-test-scope': 'ws_a' } })).status, 200);
});
