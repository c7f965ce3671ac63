/** The agent's blob client against the real blob store over real HTTP on port 0. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BlobStore } from '../../src/bridge/blob-store.js';
import { HttpBlobClient } from '../../src/agent/blob-client.js';
import { WireError } from '../../src/protocol/errors.js';

let dir: string;
let server: http.Server;
let client: HttpBlobClient;
let url: string;

before(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'aios-blobclient-'));
  const store = new BlobStore({ dir: path.join(dir, 'store'), maxBytes: 4 * 1024 * 1024 });
  server = http.createServer((req, res) => {
    if (req.headers.authorization !== 'Bearer tok') return void res.writeHead(401).end();
    void store.handleHttp(req, res, new URL(req.url ?? '/', 'http://x').pathname);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = new HttpBlobClient({ baseUrl: url, token: () => 'tok' });
});
after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await fs.promises.rm(dir, { recursive: true, force: true });
});

test('a file goes up and comes back byte for byte', async () => {
  const src = path.join(dir, 'up.bin');
  fs.writeFileSync(src, Buffer.alloc(3 * 1024 * 1024 + 17, 0xab));
  const ref = await client.uploadFile(src, 'application/octet-stream');
  assert.equal(ref.size, 3 * 1024 * 1024 + 17);
  const dst = path.join(dir, 'down.bin');
  await client.downloadToFile(ref, dst);
  assert.deepEqual(fs.readFileSync(dst), fs.readFileSync(src));
});

test('a reference whose hash or size does not match removes the download', async () => {
  const src = path.join(dir, 'small.txt');
  fs.writeFileSync(src, 'small');
  const ref = await client.uploadFile(src, 'text/plain');
  const dst = path.join(dir, 'bad.txt');
  await assert.rejects(client.downloadToFile({ ...ref, sha256: 'f'.repeat(64) }, dst), (e: unknown) => e instanceof WireError && e.details?.['reason'] === 'blob_hash_mismatch');
  assert.equal(fs.existsSync(dst), false);
  await assert.rejects(client.downloadToFile({ ...ref, size: 3 }, dst), (e: unknown) => e instanceof WireError && e.details?.['reason'] === 'blob_size_mismatch');
  assert.equal(fs.existsSync(dst), false);
});

test('over the bridge limit: payload_too_large', async () => {
  const src = path.join(dir, 'huge.bin');
  fs.writeFileSync(src, Buffer.alloc(5 * 1024 * 1024));
  await assert.rejects(client.uploadFile(src, 'application/octet-stream'), { type: 'payload_too_large' });
  const local = new HttpBlobClient({ baseUrl: url, token: () => 'tok', maxDownloadBytes: 10 });
  await assert.rejects(local.downloadToFile({ blob_id: 'b_x', sha256: '0'.repeat(64), size: 11, media_type: 'x/y' }, path.join(dir, 'n')), { type: 'payload_too_large' });
});

test('a missing blob and a bad token fail without leaving a file', async () => {
  const dst = path.join(dir, 'missing.bin');
  await assert.rejects(client.downloadToFile({ blob_id: 'b_missing', sha256: '0'.repeat(64), size: 1, media_type: 'x/y' }, dst), (e: unknown) => e instanceof WireError && e.details?.['reason'] === 'blob_not_found');
  assert.equal(fs.existsSync(dst), false);
  const bad = new HttpBlobClient({ baseUrl: url.replace('http:', 'ws:'), token: () => 'wrong' });
  const src = path.join(dir, 'small.txt');
  await assert.rejects(bad.uploadFile(src, 'text/plain'), (e: unknown) => e instanceof WireError && e.details?.['status'] === 401);
});

test('an aborted download rejects with the abort reason and removes the partial file', async () => {
  const src = path.join(dir, 'up.bin');
  const ref = await client.uploadFile(src, 'application/octet-stream');
  const dst = path.join(dir, 'aborted.bin');
  const ac = new AbortController();
  const p = client.downloadToFile(ref, dst, ac.signal);
  ac.abort(new DOMException('stop', 'AbortError'));
  await assert.rejects(p, { name: 'AbortError' });
  assert.equal(fs.existsSync(dst), false);
});

test('an upload whose token cannot be had closes the file it opened', async () => {
  const src = path.join(dir, 'no-token.bin');
  fs.writeFileSync(src, 'x');
  const failing = new HttpBlobClient({ baseUrl: url, token: () => Promise.reject(new Error('keychain locked')) });
  const fds = () => fs.readdirSync('/proc/self/fd').length;
  const before = fds();
  for (let i = 0; i < 20; i++) await assert.rejects(failing.uploadFile(src, 'text/plain'), /keychain locked/);
  assert.ok(fds() < before + 5, `file descriptors leaked: ${before} → ${fds()}`);
});
