/**
 * Blobs on a cluster (issue 34; src/bridge/cluster/pg-blob-ledger.ts, docs/deploy.md "Blobs on a cluster"):
 * real bridge nodes in this process on one private PostgreSQL 15, sharing one blobs folder as nodes share a
 * mounted one. A blob uploaded through node A is read through node B (and not by another workspace); the
 * workspace's quota holds across nodes, for uploads in flight at once; a blob too big is refused while it
 * streams (an endless body gets its 413), and a declared size too big before a byte is read.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { silentLogger } from '../../src/base/logger.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { ClusterNodeServer, type ClusterNodeServerOptions } from '../../src/bridge/cluster/node-server.js';
import { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { ids, tempDir, tokens } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';

let server: PrivatePostgres;
let n = 0;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

const KiB = 1024;
const MiB = 1024 * KiB;

type Tokens = ReturnType<typeof tokens> & { otherRuntime: string };

/** `count` nodes on a fresh database, one blobs folder for all of them, and the store seen from outside. */
async function cluster(count: number, blobs: Record<string, unknown>, opts: Partial<ClusterNodeServerOptions> = {}) {
  const db = server.createDatabase(`blobs${process.pid}_${++n}`);
  const dir = tempDir('aios-cluster-blobs-');
  const t: Tokens = { ...tokens(), otherRuntime: 'rt_other_' + randomBytes(8).toString('hex') };
  const nodes: ClusterNodeServer[] = [];
  const urls: string[] = [];
  for (let i = 0; i < count; i++) {
    const config = normalizeBridgeConfig({
      data_dir: '/nonexistent/unused',
      listen: { host: '127.0.0.1', port: 0 },
      runtime_tokens: { [t.runtime]: { workspace_id: ids.workspace_id, name: 'Agent' }, [t.otherRuntime]: { workspace_id: 'ws_other', name: 'Other' } },
      device_tokens: { [t.device]: { ...ids } },
      store: { kind: 'postgres', url: db },
      cluster: { node_id: `node_${'abc'[i]}` },
      blobs: { dir, ...blobs },
    });
    const node = new ClusterNodeServer(config, { log: silentLogger(), heartbeatMs: 200, ...opts });
    nodes.push(node);
    urls.push(await node.start());
  }
  const store = await PgBridgeStore.open(db, { max: 2 });
  return {
    t,
    dir,
    nodes,
    urls,
    /** The workspace's rows: what each upload holds. */
    rows: async () => (await store.pool.query<{ blob_id: string; state: string; size: string; node_id: string }>(`SELECT blob_id, state, size, node_id FROM bridge_blobs WHERE workspace_id = $1 ORDER BY blob_id`, [ids.workspace_id])).rows,
    async stop() {
      await Promise.all(nodes.map((x) => x.stop()));
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Answer {
  status: number;
  body: { blob_id?: string; size?: number; sha256?: string; error?: { type: string; details?: Record<string, number> } };
}

/**
 * An upload whose body the test writes chunk by chunk (chunked transfer, no Content-Length unless given):
 * `send` writes more, `end` finishes, `answer` is the response, which may come before the body ends.
 */
function upload(url: string, token: string, headers: Record<string, string> = {}) {
  const req = http.request(`${url}/v1/blobs`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', ...headers } });
  // A refusal closes the connection while the test may still be writing: that is expected, not a failure.
  req.on('error', () => undefined);
  // The head goes out now, as a client's does before its body: node holds it until the first write otherwise,
  // and a request whose head never arrives is answered 408 by the server's headers timeout, not by the bridge.
  req.flushHeaders();
  let sent = 0;
  let answered = false;
  const answer = new Promise<Answer>((resolve, reject) => {
    req.once('response', (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as Answer['body'] }));
      res.on('error', reject);
    });
  });
  return {
    answer,
    get sent() {
      return sent;
    },
    get answered() {
      return answered;
    },
    /** Writes `bytes` more and resolves once they are handed to the socket (or the server answered). */
    send(bytes: Buffer): Promise<void> {
      sent += bytes.length;
      return new Promise((resolve) => {
        if (answered || req.destroyed) return resolve();
        if (req.write(bytes)) resolve();
        else {
          req.once('drain', resolve);
          void answer.then(() => resolve(), () => resolve());
        }
      });
    },
    end(): void {
      if (!req.destroyed) req.end();
    },
  };
}

async function get(url: string, token: string, id: string, method = 'GET') {
  const r = await fetch(`${url}/v1/blobs/${id}`, { method, headers: { authorization: `Bearer ${token}` } });
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
}

test('a blob uploaded through node A is read through node B and C, never by another workspace; it expires on every node and a sweep removes its file', async () => {
  const c = await cluster(3, { ttl_s: 2 });
  const [urlA, urlB, urlC] = c.urls as [string, string, string];
  try {
    const data = randomBytes(3 * MiB + 17);
    // Uploaded by the device (a device token) through A, in chunks, without a declared size.
    const up = upload(urlA, c.t.device);
    for (let i = 0; i < data.length; i += 256 * KiB) await up.send(data.subarray(i, i + 256 * KiB));
    up.end();
    const put = await up.answer;
    assert.equal(put.status, 201, JSON.stringify(put.body));
    assert.equal(put.body.size, data.length);
    assert.equal(put.body.sha256, sha(data));
    const id = put.body.blob_id!;
    // Read by the runtime through B: the same bytes, with their reference.
    const onB = await get(urlB, c.t.runtime, id);
    assert.equal(onB.status, 200);
    assert.equal(onB.headers.get('x-blob-sha256'), sha(data));
    assert.equal(sha(onB.body), sha(data));
    const head = await get(urlC, c.t.runtime, id, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(data.length));
    // Another workspace's token does not see it, on any node; no token at all is 401.
    for (const url of c.urls) assert.equal((await get(url, c.t.otherRuntime, id)).status, 404);
    assert.equal((await fetch(`${urlB}/v1/blobs/${id}`)).status, 401);
    assert.deepEqual((await c.rows()).map((r) => [r.state, Number(r.size), r.node_id]), [['ready', data.length, 'node_a']]);
    // Its lifetime is PostgreSQL's clock, the same for every node: once it has passed, C answers 404 too,
    // and a sweep by a node that did not upload it removes its record and its file from the shared folder.
    await until(async () => (await get(urlC, c.t.runtime, id)).status === 404, 15_000, 'the blob expired as seen from node C');
    await c.nodes[1]!.blobs!.sweep();
    assert.deepEqual(await c.rows(), []);
    assert.deepEqual(readdirSync(c.dir).filter((f) => f.startsWith(id)), []);
  } finally {
    await c.stop();
  }
});

test('the workspace quota holds across nodes: an upload on B in flight while A finishes is refused at the quota, and a burst on both nodes at once stores no more than the quota', async () => {
  // Reservations every 64 KiB, so uploads under way hold what they have received.
  const c = await cluster(2, { workspace_quota_bytes: MiB }, { blobLedger: { reserveEvery: 64 * KiB } });
  const [urlA, urlB] = c.urls as [string, string];
  try {
    // Both uploads in flight at once, each with 300 KiB received, neither finished.
    const onA = upload(urlA, c.t.runtime);
    const onB = upload(urlB, c.t.device);
    await onA.send(randomBytes(300 * KiB));
    await onB.send(randomBytes(300 * KiB));
    await until(async () => {
      const rows = await c.rows();
      return rows.length === 2 && rows.every((r) => r.state === 'uploading' && Number(r.size) >= 200 * KiB);
    }, 10_000, 'both uploads holding their bytes in PostgreSQL');
    // A finishes within the quota (600 KiB of 1 MiB) while B is still under way.
    await onA.send(randomBytes(300 * KiB));
    onA.end();
    assert.equal((await onA.answer).status, 201);
    // B's next 300 KiB would pass the quota with what A holds: refused while it streams.
    await onB.send(randomBytes(300 * KiB));
    onB.end();
    const refused = await onB.answer;
    assert.equal(refused.status, 413, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.type, 'payload_too_large');
    assert.equal(refused.body.error?.details?.['quota_bytes'], MiB);
    // Only A's blob is held: B gave back its reservation, and left no partial file in the shared folder.
    await until(async () => (await c.rows()).length === 1, 10_000, 'the refused upload\'s reservation given back');
    assert.deepEqual((await c.rows()).map((r) => [r.state, Number(r.size)]), [['ready', 600 * KiB]]);
    await until(() => readdirSync(join(c.dir, 'tmp')).length === 0, 10_000, 'no partial upload left');
    // A declared size that does not fit is refused on either node before its body is read.
    for (const url of c.urls) {
      const r = await fetch(`${url}/v1/blobs`, { method: 'PUT', body: Buffer.alloc(500 * KiB), headers: { authorization: `Bearer ${c.t.runtime}` } });
      assert.equal(r.status, 413);
      assert.deepEqual(((await r.json()) as Answer['body']).error?.details, { quota_bytes: MiB, used_bytes: 600 * KiB });
    }
    // A burst: six uploads of 200 KiB at once, three through each node, into the 424 KiB left.
    const burst = Array.from({ length: 6 }, (_, i) => {
      const u = upload(c.urls[i % 2]!, c.t.runtime);
      return (async () => {
        for (let k = 0; k < 4; k++) await u.send(randomBytes(50 * KiB));
        u.end();
        return u.answer;
      })();
    });
    const answers = await Promise.all(burst);
    const stored = answers.filter((a) => a.status === 201);
    assert.ok(answers.every((a) => a.status === 201 || (a.status === 413 && a.body.error?.type === 'payload_too_large')), JSON.stringify(answers.map((a) => a.status)));
    // At most two fit (uploads refused while others held bytes may leave room unused: never more than the quota).
    assert.ok(stored.length <= 2, `${stored.length} of 6 stored`);
    await until(async () => (await c.rows()).every((r) => r.state === 'ready'), 10_000, 'refused uploads gone');
    const total = (await c.rows()).reduce((s, r) => s + Number(r.size), 0);
    assert.ok(total <= MiB, `${total} bytes held against a quota of ${MiB}`);
    assert.equal(total, 600 * KiB + stored.length * 200 * KiB);
  } finally {
    await c.stop();
  }
});

test('a blob too big is refused while it streams: an endless body gets its 413; a declared size too big is refused before a byte is read; nothing is left', async () => {
  const c = await cluster(2, { max_bytes: 4 * MiB });
  const [, urlB] = c.urls as [string, string];
  try {
    // An endless body: a server that held the blob whole before checking it would never answer.
    const endless = upload(urlB, c.t.runtime);
    const chunk = randomBytes(64 * KiB);
    while (!endless.answered) {
      await endless.send(chunk);
      // Far past the limit without an answer: the body is being held, not refused.
      assert.ok(endless.sent < 256 * MiB, `${endless.sent} bytes sent and no answer yet`);
    }
    const r = await endless.answer;
    assert.equal(r.status, 413);
    assert.equal(r.body.error?.type, 'payload_too_large');
    assert.deepEqual(r.body.error?.details, { limit: 4 * MiB });
    // Declared too big: answered at once, though not one byte of the body is sent.
    const declared = upload(urlB, c.t.runtime, { 'content-length': String(8 * 1024 * MiB) });
    const d = await declared.answer;
    assert.equal(d.status, 413);
    assert.equal(declared.sent, 0);
    await until(async () => (await c.rows()).length === 0 && readdirSync(join(c.dir, 'tmp')).length === 0, 10_000, 'nothing left of the refused uploads');
    assert.deepEqual(readdirSync(c.dir).filter((f) => f !== 'tmp'), []);
  } finally {
    await c.stop();
  }
});
