/**
 * Blobs cannot exhaust the bridge (issue 13, item 9): each workspace holds at most its quota of bytes in live
 * blobs and uploads under way (`payload_too_large` beyond it, expired blobs swept first, the count surviving
 * a restart), and every upload, by runtime or device token, takes a token from that token's rate limit.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { BlobStore } from '../../src/bridge/blob-store.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { inProcessStack } from '../helpers/stack.js';

let dir: string;
let now = 5_000_000;
const TTL = 60_000;

before(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'aios-quota-'));
});
after(async () => {
  await fs.promises.rm(dir, { recursive: true, force: true });
});

const bytes = (n: number) => Readable.from([Buffer.alloc(n, 7)]);
const store = (sub: string, quotaBytes = 1000) => new BlobStore({ dir: path.join(dir, sub), quotaBytes, ttlMs: TTL, now: () => now });

test('a workspace cannot hold more than its quota; another workspace is not affected', async () => {
  const s = store('a');
  await s.put(bytes(600), 'application/octet-stream', { scope: 'ws_a' });
  await assert.rejects(s.put(bytes(600), 'application/octet-stream', { scope: 'ws_a' }), (e: { type: string; details: Record<string, number> }) => {
    assert.equal(e.type, 'payload_too_large');
    assert.deepEqual(e.details, { quota_bytes: 1000, used_bytes: 600 });
    return true;
  });
  // Refused before a byte was read when the size is declared, and nothing is left behind either way.
  await assert.rejects(s.put(bytes(600), 'application/octet-stream', { scope: 'ws_a', declaredSize: 600 }), { type: 'payload_too_large' });
  assert.equal(await s.usedBytes('ws_a'), 600);
  assert.deepEqual(fs.readdirSync(path.join(dir, 'a', 'tmp')), []);
  await s.put(bytes(900), 'application/octet-stream', { scope: 'ws_b' });
  assert.equal(await s.usedBytes('ws_b'), 900);
});

test('the count survives a restart, and expired blobs give their bytes back', async () => {
  const first = store('b');
  await first.put(bytes(800), 'application/octet-stream', { scope: 'ws' });
  const again = store('b');
  assert.equal(await again.usedBytes('ws'), 800, 'a new store over the same folder counts what is there');
  await assert.rejects(again.put(bytes(300), 'application/octet-stream', { scope: 'ws' }), { type: 'payload_too_large' });
  now += TTL + 1;
  // The first blob has expired: the upload sweeps it and fits.
  const ref = await again.put(bytes(300), 'application/octet-stream', { scope: 'ws', declaredSize: 300 });
  assert.equal(ref.size, 300);
  assert.equal(await again.usedBytes('ws'), 300);
  await again.delete(ref.blob_id);
  await again.delete(ref.blob_id);
  assert.equal(await again.usedBytes('ws'), 0, 'a blob deleted twice gives its bytes back once');
});

test('uploads under way count: two at once cannot overrun the quota together', async () => {
  const s = store('c');
  // Each stream sends 100-byte chunks, one per turn of the loop, so the two uploads interleave.
  const trickle = (n: number) =>
    Readable.from(
      (async function* () {
        for (let i = 0; i < n / 100; i++) {
          await new Promise((r) => setImmediate(r));
          yield Buffer.alloc(100, 1);
        }
      })(),
    );
  const results = await Promise.allSettled([s.put(trickle(600), 'x/y', { scope: 'ws' }), s.put(trickle(600), 'x/y', { scope: 'ws' })]);
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  assert.equal((refused.reason as { type: string }).type, 'payload_too_large');
  assert.equal(await s.usedBytes('ws'), 600, 'the refused upload gave back what it had reserved');
});

test('bridge config: blobs.workspace_quota_bytes is validated', () => {
  const doc = { listen: { host: '127.0.0.1', port: 0 }, data_dir: path.join(dir, 'cfg'), runtime_tokens: {}, device_tokens: {} };
  assert.equal(normalizeBridgeConfig({ ...doc, blobs: { workspace_quota_bytes: 5 } }).blobs?.workspace_quota_bytes, 5);
  assert.throws(() => normalizeBridgeConfig({ ...doc, blobs: { workspace_quota_bytes: 0 } }), /workspace_quota_bytes/);
  assert.throws(() => normalizeBridgeConfig({ ...doc, blobs: { quota: 5 } }), /quota/);
});

test('through the bridge: uploads by runtime and device tokens take from the rate limit; the quota answers 413', async () => {
  const s = await inProcessStack({ bridge: { runtime_rate_limit: { per_second: 0.01, burst: 3 }, blobs: { workspace_quota_bytes: 1000 } } });
  try {
    const put = (token: string, body: Buffer) => fetch(`${s.url}/v1/blobs`, { method: 'PUT', body, headers: { Authorization: `Bearer ${token}` } });
    for (let i = 0; i < 3; i++) assert.equal((await put(s.tokens.runtime, Buffer.alloc(10))).status, 201);
    const limited = await put(s.tokens.runtime, Buffer.alloc(10));
    assert.equal(limited.status, 429);
    assert.equal(((await limited.json()) as { error: { type: string } }).error.type, 'rate_limited');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    // The runtime API shares the bucket: the token has no request left for calls either.
    assert.equal((await fetch(`${s.url}/v1/devices`, { headers: { Authorization: `Bearer ${s.tokens.runtime}` } })).status, 429);
    // A device token has its own bucket, and the workspace's quota is shared by both.
    const big = await put(s.tokens.device, Buffer.alloc(1200));
    assert.equal(big.status, 413);
    const body = (await big.json()) as { error: { type: string; details: { quota_bytes: number } } };
    assert.equal(body.error.type, 'payload_too_large');
    assert.equal(body.error.details.quota_bytes, 1000);
    // The refused upload took one of the device's three; two more pass, the next is limited.
    assert.equal((await put(s.tokens.device, Buffer.alloc(10))).status, 201);
    assert.equal((await put(s.tokens.device, Buffer.alloc(10))).status, 201);
    assert.equal((await put(s.tokens.device, Buffer.alloc(10))).status, 429);
    // Downloads are not uploads: they stay possible for the device.
    assert.equal((await fetch(`${s.url}/v1/blobs/b_missing`, { headers: { Authorization: `Bearer ${s.tokens.device}` } })).status, 404);
  } finally {
    await s.stop();
  }
});
