/**
 * The cluster bus (src/bridge/cluster/): two nodes' PostgreSQL buses on one private PostgreSQL 15
 * (test/helpers/postgres.ts), and the one-process bus over SQLite.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { DeviceChanges } from '../../src/bridge/cluster/device-changes.js';
import { silentLogger } from '../../src/base/logger.js';
import { BadNodeIdError, BusPayloadTooLargeError, decodeMessage, encodeMessage, nodeChannel, type BusMessage } from '../../src/bridge/cluster/bus.js';
import { PgClusterBus } from '../../src/bridge/cluster/pg-bus.js';
import { LocalBus } from '../../src/bridge/cluster/local-bus.js';
import { SqliteBridgeStore } from '../../src/bridge/store/sqlite-store.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';
import { withNodes, type TestNode } from './cluster-node.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

type Node = TestNode;
/** Nodes a and b on a fresh database. */
const withTwo = (fn: (a: Node, b: Node, url: string) => Promise<void>) => withNodes(server, ['node_a', 'node_b'], ([a, b], url) => fn(a!, b!, url));

const call = (id: string): BusMessage => ({ type: 'call', workspace_id: 'ws_a', call_id: id });
const has = (node: Node, id: string) => node.heard.some((m) => 'call_id' in m && m.call_id === id);

test('two nodes on one PostgreSQL hear the messages sent to them and the broadcasts, and not the other node\'s', () =>
  withTwo(async (a, b) => {
    assert.deepEqual(a.caughtUp, ['start'], 'the catch-up hook ran once the first LISTEN was in place');
    await a.bus.notify('node_b', call('to_b'));
    await b.bus.notify('node_a', { type: 'session_replaced', workspace_id: 'ws_a', device_id: 'dev_1', epoch: 7 });
    await a.bus.broadcast({ type: 'call_changed', workspace_id: 'ws_a', call_id: 'everyone' });
    await until(() => has(b, 'to_b') && has(a, 'everyone') && has(b, 'everyone') && a.heard.some((m) => m.type === 'session_replaced'), 10_000, 'the messages');
    assert.deepEqual(a.heard.find((m) => m.type === 'session_replaced'), { type: 'session_replaced', workspace_id: 'ws_a', device_id: 'dev_1', epoch: 7 });
    // Every message sent so far has arrived wherever it was going: node a never heard b's.
    assert.equal(has(a, 'to_b'), false);
  }));

test('a message sent in a store transaction arrives on its commit, and never when the transaction rolls back', () =>
  withTwo(async (a, b) => {
    await assert.rejects(
      a.store.transaction(async (tx) => {
        await a.bus.notify('node_b', call('rolled_back'), tx);
        throw new Error('boom');
      }),
      /boom/,
    );
    let sentOutside!: () => void;
    const outsideSeen = new Promise<void>((r) => (sentOutside = r));
    const committed = a.store.transaction(async (tx) => {
      await a.bus.notify('node_b', call('committed'), tx);
      // While this transaction is open, a message sent outside it arrives and this one does not.
      await a.bus.notify('node_b', call('outside'));
      await until(() => has(b, 'outside'), 10_000, 'the message sent outside the transaction');
      assert.equal(has(b, 'committed'), false, 'not delivered before the commit');
      sentOutside();
    });
    await outsideSeen;
    await committed;
    await until(() => has(b, 'committed'), 10_000, 'the committed message');
    // Notifications arrive in commit order: the rolled-back one, sent first, would have arrived by now.
    assert.equal(has(b, 'rolled_back'), false, 'a rolled-back message is never delivered');
  }));

test('when its listening connection is killed, the bus listens again by itself, runs the catch-up hook, and hears again', () =>
  withTwo(async (a, b) => {
    const killed = await a.store.pool.query(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1`, [b.bus.applicationName]);
    assert.deepEqual(killed.rows, [{ ok: true }], 'exactly one listening connection for node b');
    await until(() => b.caughtUp.includes('reconnect'), 10_000, () => `node b's catch-up after reconnecting (ran: ${b.caughtUp.join(', ')})`);
    assert.equal(b.bus.reconnects, 1);
    assert.equal(b.bus.state, 'listening');
    await a.bus.notify('node_b', call('after'));
    await until(() => has(b, 'after'), 10_000, 'a message sent after the reconnection');
    const listeners = await a.store.pool.query(`SELECT count(*)::int AS n, bool_and(state = 'idle') AS idle FROM pg_stat_activity WHERE application_name = $1`, [b.bus.applicationName]);
    assert.deepEqual(listeners.rows, [{ n: 1, idle: true }], 'one listening connection again, never in a transaction');
  }));

test('the catch-up hook also runs as a periodic sweep while the bus listens, never two scans at once', () =>
  withTwo(async (a, _b, url) => {
    let running = 0;
    let overlapped = false;
    const reasons: string[] = [];
    const bus = new PgClusterBus({
      url,
      nodeId: 'sweeper',
      store: a.store,
      log: silentLogger(),
      sweepMs: 20,
      caughtUp: async (r) => {
        overlapped ||= running > 0;
        running++;
        reasons.push(r);
        // A slow scan: the sweeps due meanwhile wait for it.
        await new Promise((res) => setTimeout(res, 50));
        running--;
      },
    });
    await bus.start();
    try {
      await until(() => reasons.filter((r) => r === 'sweep').length >= 3, 10_000, 'three sweeps');
      assert.equal(reasons[0], 'start');
      assert.equal(overlapped, false, 'scans never overlap');
      // A 50 ms scan every 20 ms: sweeps are skipped while one is due, not queued without end.
      assert.ok(reasons.length < 10, `no pile of sweeps: ${reasons.length} scans`);
    } finally {
      await bus.close();
    }
  }));

test('node ids must be channel-safe, and a message too long for NOTIFY is refused before anything is sent', async () => {
  for (const bad of ['Node_A', 'a-b', '', 'x'.repeat(33), 'a;NOTIFY b']) assert.throws(() => nodeChannel(bad), BadNodeIdError, bad);
  assert.throws(() => new PgClusterBus({ url: 'postgres://x', nodeId: 'Node', store: { notify: async () => undefined }, caughtUp: () => undefined, log: silentLogger() }), BadNodeIdError);
  assert.equal(nodeChannel('node_1'), 'aios_node_node_1');
  assert.throws(() => encodeMessage(call('x'.repeat(8000))), BusPayloadTooLargeError);
  assert.deepEqual(decodeMessage(encodeMessage(call('c1'))), call('c1'));
  const revoked: BusMessage = { type: 'device_revoked', workspace_id: 'ws_a', user_id: 'usr_a', device_id: 'dev_1' };
  assert.deepEqual(decodeMessage(encodeMessage(revoked)), revoked);
  for (const changed of [{ type: 'devices_changed', workspace_id: 'ws_a', device_ids: ['dev_1', 'dev_2'] }, { type: 'devices_changed', workspace_id: 'ws_a' }] as BusMessage[]) {
    assert.deepEqual(decodeMessage(encodeMessage(changed)), changed);
  }
  for (const junk of ['{"type":"devices_changed"}', '{"type":"devices_changed","workspace_id":"w","device_ids":"d"}', '{"type":"devices_changed","workspace_id":"w","device_ids":["d",""]}']) assert.equal(decodeMessage(junk), null, junk);
  for (const junk of ['', 'null', '{"type":"call"}', '{"type":"nope","workspace_id":"w","call_id":"c"}', '{"type":"session_replaced","workspace_id":"w","device_id":"d","epoch":"1"}', '{"type":"device_revoked","workspace_id":"w","device_id":"d"}']) assert.equal(decodeMessage(junk), null, junk);
});

test('a database that accepts the connection and then says nothing (a partition) does not hang the bus: the attempt times out', async () => {
  const held: Socket[] = [];
  const silent = createServer((sock) => void held.push(sock));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  const { port } = silent.address() as AddressInfo;
  const bus = new PgClusterBus({ url: `postgres://postgres@127.0.0.1:${port}/postgres`, nodeId: 'cut_off', store: { notify: async () => undefined }, caughtUp: () => undefined, log: silentLogger(), probeMs: 300 });
  try {
    await assert.rejects(bus.start(), /timeout/i);
    assert.equal(bus.state, 'idle');
  } finally {
    await bus.close();
    held.forEach((s) => s.destroy());
    await new Promise<void>((r) => silent.close(() => r()));
  }
});

test('one process on SQLite: the local bus delivers on commit, never on rollback', async () => {
  const dir = tempDir();
  const store = SqliteBridgeStore.open(join(dir, 'bridge.sqlite'));
  const heard: BusMessage[] = [];
  const bus = new LocalBus({ store, nodeId: 'solo', log: silentLogger() });
  bus.subscribe((m) => heard.push(m));
  await bus.start();
  try {
    await assert.rejects(store.transaction(async (tx) => {
      await bus.notify('solo', call('rolled_back'), tx);
      throw new Error('boom');
    }), /boom/);
    await store.transaction(async (tx) => {
      await bus.notify('solo', call('committed'), tx);
      await bus.notify('other', call('not_mine'), tx);
    });
    await bus.broadcast(call('all'));
    await until(() => heard.length >= 2, 5_000, 'the committed message and the broadcast');
    assert.deepEqual(heard.map((m) => (m as { call_id: string }).call_id), ['committed', 'all']);
  } finally {
    await bus.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('PostgreSQL restarted: while it is down the bus keeps trying with backoff; once it is back, the bus listens again, catches up and hears', async () => {
  // An instance of its own: the other tests' databases stay up.
  const pgOwn = await startPostgres();
  try {
    await withNodes(pgOwn, ['node_a', 'node_b'], async ([a, b]) => {
      pgOwn.down();
      try {
        // Attempts fail while the server is down, and the bus goes on trying.
        await until(() => a!.bus.failedAttempts >= 2 && b!.bus.failedAttempts >= 2, 10_000, 'failed attempts to listen again while the server is down');
        assert.equal(b!.bus.state, 'reconnecting');
      } finally {
        pgOwn.up();
      }
      await until(() => a!.caughtUp.includes('reconnect') && b!.caughtUp.includes('reconnect'), 20_000, () => `both buses catching up (a: ${a!.caughtUp.join()}, b: ${b!.caughtUp.join()})`);
      // The store's pool replaces its dropped connections by itself; a message goes through again.
      await until(async () => {
        try {
          await a!.bus.notify('node_b', call('after_restart'));
          return true;
        } catch {
          return false;
        }
      }, 10_000, 'sending again');
      await until(() => has(b!, 'after_restart'), 10_000, 'a message after the restart');
    });
  } finally {
    pgOwn.stop();
  }
});

test('device changes of one window go out as one devices_changed per workspace; ids that do not fit a NOTIFY name the workspace only', () => {
  const sent: BusMessage[] = [];
  const changes = new DeviceChanges({ broadcast: async (m) => void sent.push(m), log: silentLogger(), windowMs: 3_600_000 });
  changes.changed('ws_a', 'dev_1');
  changes.changed('ws_a', 'dev_2');
  changes.changed('ws_a', 'dev_1');
  changes.changed('ws_b', 'dev_9');
  assert.deepEqual(sent, [], 'nothing before the window ends');
  changes.flush();
  assert.deepEqual(sent, [
    { type: 'devices_changed', workspace_id: 'ws_a', device_ids: ['dev_1', 'dev_2'] },
    { type: 'devices_changed', workspace_id: 'ws_b', device_ids: ['dev_9'] },
  ]);
  sent.length = 0;
  for (let i = 0; i < 1000; i++) changes.changed('ws_a', `device_with_a_long_name_${i}`);
  changes.flush();
  assert.deepEqual(sent, [{ type: 'devices_changed', workspace_id: 'ws_a' }], 'too many ids for 8000 bytes: the whole workspace');
  changes.close();
  changes.changed('ws_a', 'dev_1');
  changes.flush();
  assert.equal(sent.length, 1, 'nothing after close');
});
