/**
 * The cluster bus behind PgBouncer (docs/deploy.md, "PgBouncer"), with a real PgBouncer in front of a private
 * PostgreSQL 15: in transaction mode LISTEN seems to work and hears nothing (the server connection goes to
 * other clients between statements), so the bus refuses to start with `cluster_bus_not_delivering` instead of
 * running a node that never hears the others; in session mode it starts and hears another node's message.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { silentLogger } from '../../src/base/logger.js';
import { BusNotDeliveringError, PgClusterBus } from '../../src/bridge/cluster/pg-bus.js';
import type { BusMessage } from '../../src/bridge/cluster/bus.js';
import type { AsyncBridgeStore } from '../../src/bridge/store/async-store.js';
import { startPgBouncer, startPostgres, type PrivatePgBouncer, type PrivatePostgres } from '../helpers/postgres.js';
import { until } from '../helpers/wait.js';

let server: PrivatePostgres;
let bouncer: PrivatePgBouncer;
const pools: pg.Pool[] = [];
before(async () => {
  server = await startPostgres();
  server.createDatabase('bounced');
  bouncer = await startPgBouncer(server, 'bounced');
});
after(async () => {
  await Promise.all(pools.map((p) => p.end()));
  bouncer?.stop();
  server?.stop();
});

/** What the bus sends through: a pool on `url`, as a node's store is. */
function sender(url: string): Pick<AsyncBridgeStore, 'notify'> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pools.push(pool);
  return { notify: async (channel, payload) => void (await pool.query('SELECT pg_notify($1, $2)', [channel, payload])) };
}

const bus = (url: string, nodeId: string) =>
  new PgClusterBus({ url, nodeId, store: sender(url), log: silentLogger(), caughtUp: () => undefined, deliveryCheckMs: 2_000, sweepMs: 0 });

test('through PgBouncer in transaction mode the bus refuses to start, saying why', async () => {
  const b = bus(bouncer.transactionUrl, 'node_tx');
  await assert.rejects(b.start(), (e: unknown) => {
    assert.ok(e instanceof BusNotDeliveringError, String(e));
    assert.equal(e.code, 'cluster_bus_not_delivering');
    assert.match(e.message, /node_tx/);
    assert.match(e.message, /PgBouncer/);
    return true;
  });
  assert.equal(b.state, 'closed', 'a refused bus keeps no listening connection');
});

test('through PgBouncer in session mode the bus starts and hears another node', async () => {
  const a = bus(bouncer.sessionUrl, 'node_sa');
  const b = bus(bouncer.sessionUrl, 'node_sb');
  const heard: BusMessage[] = [];
  try {
    await a.start();
    await b.start();
    a.subscribe((m) => heard.push(m));
    await b.notify('node_sa', { type: 'call', workspace_id: 'ws_a', call_id: 'c1' });
    await until(() => heard.length > 0, 10_000, 'the message through session-mode PgBouncer');
    assert.deepEqual(heard, [{ type: 'call', workspace_id: 'ws_a', call_id: 'c1' }], 'the start-up test messages are never handed to subscribers');
  } finally {
    await a.close();
    await b.close();
  }
});
