/**
 * One rate limit for the whole cluster (issue 34; src/bridge/store/pg-rate-limits.ts): three real bridge nodes in
 * this process on one private PostgreSQL 15. A burst of one runtime token's requests spread over the three nodes
 * meets one bucket (about `burst` allowed in all, not three times it); the sign-in routes' failure counters are
 * shared the same way; and with PostgreSQL down the limiter answers 503 `store_unavailable`, never a 500.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { PgBridgeStore, StoreUnavailableError } from '../../src/bridge/store/pg-store.js';
import { PgRateLimits } from '../../src/bridge/store/pg-rate-limits.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { tokens } from '../helpers/stack.js';
import { clusterDatabase, startCluster } from '../helpers/cluster.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

const BURST = 12;
const PER_SECOND = 1;

test('a burst of one token spread over three nodes meets one shared limit: about the burst is allowed in all, not three times it; the 429s say when to retry; PostgreSQL down is 503 store_unavailable, not 500', async () => {
  const t = tokens();
  const c = await startCluster(server, 'rate', t, ['node_a', 'node_b', 'node_c'], {}, undefined, { runtime_rate_limit: { per_second: PER_SECOND, burst: BURST } });
  const urls = c.urls;
  try {
    const get = async (url: string) => {
      const r = await fetch(`${url}/v1/devices`, { headers: { authorization: `Bearer ${t.runtime}` } });
      return { status: r.status, retryAfter: r.headers.get('retry-after'), body: (await r.json()) as { error?: { type: string; details?: { retry_after_ms: number } } } };
    };
    // 3 × BURST requests at once, BURST through each node: a per-node limit would allow every one of them.
    const started = performance.now();
    const answers = await Promise.all(urls.flatMap((url) => Array.from({ length: BURST }, () => get(url))));
    const elapsedS = (performance.now() - started) / 1000;
    const allowed = answers.filter((a) => a.status === 200).length;
    const limited = answers.filter((a) => a.status === 429);
    assert.equal(allowed + limited.length, answers.length, `only 200 and 429: ${JSON.stringify(answers.filter((a) => a.status !== 200 && a.status !== 429))}`);
    // The bucket refills at PER_SECOND while the burst is served: allow for that, and nothing more.
    const most = BURST + Math.ceil(elapsedS * PER_SECOND) + 1;
    assert.ok(allowed >= BURST, `the whole burst is allowed (${allowed})`);
    assert.ok(allowed <= most, `${allowed} allowed across three nodes in ${elapsedS.toFixed(2)} s: more than one bucket's ${most}`);
    for (const a of limited) {
      assert.equal(a.body.error?.type, 'rate_limited');
      assert.ok((a.body.error?.details?.retry_after_ms ?? 0) > 0);
      assert.ok(Number(a.retryAfter) >= 1, 'Retry-After');
    }

    // The database gone: the limiter's failure to reach it is the typed 503 the other routes give.
    server.down();
    try {
      for (const url of urls) {
        const r = await get(url);
        assert.equal(r.status, 503, JSON.stringify(r.body));
        assert.equal(r.body.error?.type, 'store_unavailable');
        assert.equal(r.retryAfter, '5');
      }
    } finally {
      server.up();
    }
  } finally {
    await c.stop();
  }
});

test('shared limits in PostgreSQL: buckets per key and name, waits on the database clock, failure counters shared by two nodes, keys stored hashed, store errors typed', async () => {
  const db = clusterDatabase(server, 'ratestore');
  const store = await PgBridgeStore.open(db, { max: 2 });
  const pools = [new pg.Pool({ connectionString: db, max: 2 }), new pg.Pool({ connectionString: db, max: 2 })];
  try {
    const [a, b] = pools.map((p) => new PgRateLimits(p)) as [PgRateLimits, PgRateLimits];
    const bucketA = a.buckets('runtime', 1, 2);
    const bucketB = b.buckets('runtime', 1, 2);
    assert.equal(await bucketA.take('rt_secret_token'), 0);
    assert.equal(await bucketB.take('rt_secret_token'), 0, 'node B takes from the same bucket');
    const wait = await bucketA.take('rt_secret_token');
    assert.ok(wait > 0 && wait <= 1000, `the third waits for the next token at 1/s (${wait} ms)`);
    assert.equal(await bucketB.take('rt_other'), 0, 'another key has its own bucket');
    assert.equal(await b.buckets('blobs', 1, 2).take('rt_secret_token'), 0, 'another limit has its own bucket for the same key');

    const attemptsA = a.attempts('codes', 3, 60_000);
    const attemptsB = b.attempts('codes', 3, 60_000);
    assert.equal(await attemptsA.blocked('ip:10.0.0.1'), false);
    await attemptsA.fail('ip:10.0.0.1');
    await attemptsB.fail('ip:10.0.0.1');
    assert.equal(await attemptsB.blocked('ip:10.0.0.1'), false, 'two failures of three');
    assert.equal(await attemptsA.retryAfterMs('ip:10.0.0.1'), 0);
    await attemptsA.fail('ip:10.0.0.1');
    assert.equal(await attemptsB.blocked('ip:10.0.0.1'), true, 'the third failure, on either node, blocks on both');
    const retry = await attemptsB.retryAfterMs('ip:10.0.0.1');
    assert.ok(retry > 0 && retry <= 60_000, `retry after ${retry} ms`);
    assert.equal(await attemptsA.blocked('ip:10.0.0.2'), false, 'another address is not blocked');
    assert.equal(await a.attempts('signin', 3, 60_000).blocked('ip:10.0.0.1'), false, 'another limit counts apart');

    const dump = JSON.stringify([...(await store.pool.query('SELECT * FROM rate_buckets')).rows, ...(await store.pool.query('SELECT * FROM rate_attempts')).rows]);
    for (const secret of ['rt_secret_token', '10.0.0.1']) assert.ok(!dump.includes(secret), `${secret} is stored in the clear`);
    await a.sweep();

    // A pool that cannot reach the database: the typed error, which the routes answer 503.
    const dead = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1, connectionTimeoutMillis: 2000 });
    try {
      await assert.rejects(Promise.resolve(new PgRateLimits(dead).buckets('runtime', 1, 2).take('x')), StoreUnavailableError);
      await assert.rejects(Promise.resolve(new PgRateLimits(dead).attempts('codes', 3, 1000).fail('x')), StoreUnavailableError);
    } finally {
      await dead.end();
    }
  } finally {
    for (const p of pools) await p.end();
    await store.close();
  }
});
