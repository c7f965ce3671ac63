/**
 * PostgreSQL down under a cluster node (issue 34, PROTOCOL §2 and §10): the node keeps its device WebSockets,
 * answers the runtime API 503 `store_unavailable` (the full error body, `Retry-After`), refuses a hello it
 * cannot claim a session for with the same typed error, and recovers by itself once PostgreSQL is back: calls
 * complete again without restarting the node, and a call recorded before the outage is still there. Two real
 * nodes on a private PostgreSQL 15 that this file stops (`down()`, as a crash would) and starts again.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { isStoreUnreachable, StoreUnavailableError } from '../../src/bridge/store/pg-store.js';
import type { SimDevice } from '../../bench/sim-device.js';
import { simOn, startCluster, STORE_UNAVAILABLE, submit, type InProcessCluster, type Tokens } from '../helpers/cluster.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { ids, tokens } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

const post = (url: string, t: Tokens, body: Record<string, unknown>) => submit(url, t, { function: 'diagnostics.echo', ...body });

async function get(url: string, t: Tokens, path: string) {
  const r = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${t.runtime}` } });
  return { status: r.status, retryAfter: r.headers.get('retry-after'), body: (await r.json()) as Record<string, unknown> };
}


test('PostgreSQL down: 503 store_unavailable with Retry-After on every runtime route, hellos refused with it, WebSockets kept; back up: calls complete again on the same nodes, nothing lost', async () => {
  const t = tokens();
  let c: InProcessCluster | undefined;
  const sims: SimDevice[] = [];
  try {
    const bus = { backoffMs: 50, maxBackoffMs: 300 };
    c = await startCluster(server, 'down', t, ['node_a', 'node_b'], { node_a: { bus }, node_b: { bus } });
    const urls = c.urls;
    const [urlA, urlB] = urls as [string, string];
    const sim = simOn(urlA, t);
    sims.push(sim);
    let closed: number | undefined;
    sim.onclose = (code) => (closed = code);
    await sim.connect();
    const before = await until(async () => {
      const r = await post(urlB, t, { arguments: { value: 'before' }, wait: true });
      return r.status === 200 ? r : undefined;
    }, 10_000, 'a call through node B answered by the device on node A');
    const beforeId = before.body['call_id'] as string;
    assert.equal(before.body['state'], 'completed');

    server.down();
    for (const url of urls) {
      const r = await post(url, t, { arguments: { value: 'during' } });
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.deepEqual(r.body, { error: STORE_UNAVAILABLE });
      assert.equal(r.retryAfter, '5');
      for (const path of [`/v1/calls/${beforeId}`, `/v1/devices/${ids.device_id}`, '/v1/devices']) {
        const g = await get(url, t, path);
        assert.equal(g.status, 503, `${path}: ${JSON.stringify(g.body)}`);
        assert.deepEqual(g.body, { error: STORE_UNAVAILABLE }, path);
        assert.equal(g.retryAfter, '5', path);
      }
      const h = await get(url, t, '/health');
      assert.equal(h.status, 503);
      assert.equal(h.body['status'], 'store_unavailable');
      assert.equal(h.retryAfter, '5');
    }
    // A hello that cannot claim its session is refused with the typed, retryable error.
    const late = simOn(urlB, t);
    sims.push(late);
    const refused = (await late.connect().then(() => undefined, (e: { rpc?: { code: number; data?: { type: string; retryable: boolean } } }) => e)) as { rpc?: { code: number; data?: { type: string; retryable: boolean } } } | undefined;
    assert.equal(refused?.rpc?.code, -41062, JSON.stringify(refused));
    assert.deepEqual(refused?.rpc?.data, { type: 'store_unavailable', retryable: true });
    assert.equal(sim.online, true, 'the device on node A keeps its WebSocket');
    assert.equal(closed, undefined);

    server.up();
    // The same nodes, never restarted: their pools and buses reconnect by themselves.
    const afterUp = await until(async () => {
      const r = await post(urlB, t, { arguments: { value: 'after' }, wait: true, wait_timeout_ms: 2000 });
      return r.status === 200 && r.body['state'] === 'completed' ? r : undefined;
    }, 30_000, 'a call through node B completed after PostgreSQL came back');
    assert.deepEqual((afterUp.body['outcome'] as { output: unknown }).output, { value: 'after' });
    assert.equal(sim.online, true);
    assert.equal(closed, undefined, 'the device never lost its WebSocket');
    const kept = await get(urlA, t, `/v1/calls/${beforeId}`);
    assert.equal(kept.status, 200);
    assert.equal(kept.body['state'], 'completed');
    assert.deepEqual((kept.body['outcome'] as { output: unknown }).output, { value: 'before' }, 'the call recorded before the outage is kept');
    assert.equal((await get(urlA, t, '/health')).status, 200);
  } finally {
    for (const s of sims) s.close(true);
    await c?.stop();
  }
});

test('only a failure to reach the database is store_unavailable: a constraint violation or a bad query stays what it is', () => {
  const pgError = (code: string) => Object.assign(new Error('x'), { code });
  assert.equal(isStoreUnreachable(pgError('ECONNREFUSED')), true);
  assert.equal(isStoreUnreachable(pgError('57P01')), true, 'admin shutdown');
  assert.equal(isStoreUnreachable(pgError('08006')), true, 'connection failure');
  assert.equal(isStoreUnreachable(new Error('Connection terminated unexpectedly')), true);
  assert.equal(isStoreUnreachable(new Error('timeout exceeded when trying to connect')), true);
  assert.equal(isStoreUnreachable(new AggregateError([pgError('ECONNREFUSED'), pgError('ECONNREFUSED')])), true);
  assert.equal(isStoreUnreachable(new StoreUnavailableError(new Error('x'))), true);
  assert.equal(isStoreUnreachable(pgError('23505')), false, 'unique violation');
  assert.equal(isStoreUnreachable(pgError('42601')), false, 'syntax error');
  assert.equal(isStoreUnreachable(new TypeError('a bug')), false);
  assert.equal(isStoreUnreachable('a string'), false);
});
