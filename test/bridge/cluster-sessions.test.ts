/**
 * Device sessions across a cluster (src/bridge/cluster/sessions.ts): two nodes with real buses on one private
 * PostgreSQL 15. The newest claim wins, the old owner is told (to close with 4001), and the old epoch's late
 * writes are refused.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSessions, StaleSessionError } from '../../src/bridge/cluster/sessions.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { until } from '../helpers/wait.js';
import type { StoredCall } from '../../src/bridge/store.js';
import type { StoreOps } from '../../src/bridge/store/async-store.js';
import { aCall } from './store-suite.js';
import { withNodes, type TestNode } from './cluster-node.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

const sessionsOf = (node: TestNode) => new DeviceSessions({ store: node.store, bus: node.bus, leaseMs: 60_000 });

test('the newer claim on another node wins: the old owner is told to close the device\'s older session, and the old epoch\'s late answer is refused', () =>
  withNodes(server, ['node_a', 'node_b'], async ([a, b]) => {
    const onA = sessionsOf(a!);
    const onB = sessionsOf(b!);
    const closedOnA: [string, string, number][] = [];
    onA.onReplaced((ws, dev, epoch) => closedOnA.push([ws, dev, epoch]));
    await a!.store.insertCall(aCall());

    const oldEpoch = await onA.claim('ws_a', 'dev_1');
    const newEpoch = await onB.claim('ws_a', 'dev_1');
    assert.ok(newEpoch > oldEpoch);
    await until(() => closedOnA.length > 0, 10_000, 'node a told that its session was replaced');
    assert.deepEqual(closedOnA, [['ws_a', 'dev_1', newEpoch]]);
    assert.equal(b!.heard.some((m) => m.type === 'session_replaced'), false, 'the new owner is not told to close anything');

    // The old session's answer arrives late on node a: refused, nothing written.
    await assert.rejects(
      onA.fencedCall('ws_a', 'dev_1', oldEpoch, 'c1', async (tx) => tx.saveCall(aCall({ state: 'succeeded', outcome: { state: 'succeeded' } as never }))),
      (e: unknown) => e instanceof StaleSessionError && e.code === 'session_replaced' && e.epoch === oldEpoch,
    );
    assert.equal((await a!.store.getCall('ws_a', 'c1'))?.state, 'submitted');
    // The current session's answer is written.
    await onB.fencedCall('ws_a', 'dev_1', newEpoch, 'c1', async (tx) => tx.saveCall(aCall({ state: 'failed', outcome: { state: 'failed' } as never })));
    assert.equal((await a!.store.getCall('ws_a', 'c1'))?.state, 'failed');
  }));

/** Which fenced write of node a a race test holds open: its transaction, and how a write for an old epoch is refused. */
type FencedWrite = (on: DeviceSessions, epoch: number, body: (tx: StoreOps) => Promise<void>) => Promise<void>;

/**
 * Node a's fenced write for the device's session is held open while node b claims the device (and, with
 * `contender`, while another write of node b's waits): the claim waits for the write, then wins; the write
 * made before it stands, and the old epoch is refused afterwards.
 */
const claimDuringWrite = (open: FencedWrite, contender?: { start: (b: TestNode) => Promise<StoredCall | undefined>; query: string }) =>
  withNodes(server, ['node_a', 'node_b'], async ([a, b]) => {
    const onA = sessionsOf(a!);
    const onB = sessionsOf(b!);
    await a!.store.insertCall(aCall());
    const oldEpoch = await onA.claim('ws_a', 'dev_1');
    let writing!: () => void;
    const inside = new Promise<void>((r) => (writing = r));
    let finish!: () => void;
    const proceed = new Promise<void>((r) => (finish = r));
    const write = open(onA, oldEpoch, async (tx) => {
      writing();
      await proceed;
      await tx.saveCall(aCall({ state: 'succeeded', outcome: { state: 'succeeded' } as never }));
    });
    await inside;
    let claimed = false;
    const claim = onB.claim('ws_a', 'dev_1').then((e) => ((claimed = true), e));
    const other = contender?.start(b!);
    const waiting = (what: string) => async () => (await a!.store.pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`, [what])).rowCount === 1;
    try {
      // The claim waits on the session row the fenced write holds.
      await until(waiting('%device_sessions%FOR UPDATE%'), 5_000, 'the claim waiting on the session row');
      if (contender) await until(waiting(contender.query), 5_000, 'the other write waiting on the call row');
      assert.equal(claimed, false);
    } finally {
      // Whatever happened, the write's transaction ends (an open one would keep the pool from closing).
      finish();
      await write.catch(() => undefined);
    }
    await write;
    if (other) assert.equal((await other)?.state, 'succeeded', 'the waiting write reads the committed record');
    const newEpoch = await claim;
    assert.ok(newEpoch > oldEpoch);
    assert.equal((await a!.store.getCall('ws_a', 'c1'))?.state, 'succeeded', 'the write made before the claim stands');
    await assert.rejects(open(onA, oldEpoch, async () => undefined), StaleSessionError);
  });

test('the fence and the call\'s lock in one read hold both rows: a claim and another write to the call wait for the write, and the old epoch is then refused', () =>
  claimDuringWrite(
    (on, epoch, body) => on.fencedCall('ws_a', 'dev_1', epoch, 'c1', async (tx, call) => {
      assert.equal(call?.state, 'submitted', 'the call read with the fence');
      await body(tx);
    }),
    // Another node's write to the call (its sweeper's) waits on the call row.
    { start: (b) => b.store.transaction((tx) => tx.getCall('ws_a', 'c1', true)), query: '%bridge_calls%FOR UPDATE' },
  ));

test('a node\'s heartbeat renews its sessions; when it stops, its lapsed leases are visible to the other nodes', () =>
  withNodes(server, ['node_a', 'node_b'], async ([a, b]) => {
    const short = new DeviceSessions({ store: a!.store, bus: a!.bus, leaseMs: 0 });
    await sessionsOf(a!).claim('ws_a', 'dev_1');
    await sessionsOf(b!).claim('ws_a', 'dev_2');
    assert.deepEqual(await b!.store.lapsedSessions(), []);
    assert.equal(await sessionsOf(a!).renew(), 1);
    // Node a's lease runs out (its last renewal gave no time, as if it had died right after).
    assert.equal(await short.renew(), 1);
    const lapsed = await until(async () => (await b!.store.lapsedSessions()).map((s) => `${s.node_id}/${s.device_id}`).join() || null, 5_000, 'a lapsed lease');
    assert.equal(lapsed, 'node_a/dev_1');
  }));

/** The PostgreSQL transaction that last wrote each call (`xmin`): calls written in one transaction share it. */
const writers = async (node: TestNode, ids: string[]) =>
  (await node.store.pool.query<{ call_id: string; xmin: string }>(`SELECT call_id, xmin::text FROM bridge_calls WHERE workspace_id = 'ws_a' AND call_id = ANY($1) ORDER BY call_id`, [ids])).rows.map((r) => r.xmin);

/** Counts the store transactions `node` opens from now on. */
function countTransactions(node: TestNode): { n: number } {
  const count = { n: 0 };
  const open = node.store.transaction.bind(node.store);
  node.store.transaction = (fn) => (count.n++, open(fn));
  return count;
}

test('a node\'s fenced writes of one turn commit in one transaction: each is told as before, a replaced session\'s write is refused alone, and a call\'s second write waits for the next batch', () =>
  withNodes(server, ['node_a', 'node_b'], async ([a, b]) => {
    const onA = sessionsOf(a!);
    for (const id of ['c1', 'c2', 'c3']) await a!.store.insertCall(aCall({ call_id: id }));
    await a!.store.insertCall(aCall({ call_id: 'c4', device_id: 'dev_2' }));
    const epoch = await onA.claim('ws_a', 'dev_1');
    // Device 2's session on node a is replaced by one on node b: what it still sends on node a is stale.
    const stale = await onA.claim('ws_a', 'dev_2');
    await sessionsOf(b!).claim('ws_a', 'dev_2');
    const transactions = countTransactions(a!);
    const done = (id: string) => async (tx: StoreOps, call: StoredCall | undefined) => {
      assert.equal(call?.state, 'submitted', `${id} read with the fence`);
      await tx.saveCall(aCall({ call_id: id, device_id: call.device_id, state: 'succeeded', outcome: { state: 'succeeded' } as never }));
      await a!.bus.broadcast({ type: 'call_changed', workspace_id: 'ws_a', call_id: id }, tx);
      return id;
    };
    // All in one turn: three outcomes of device 1, a late one of device 2's replaced session, and c1 read again.
    const written = ['c3', 'c1', 'c2'].map((id) => onA.fencedCall('ws_a', 'dev_1', epoch, id, done(id)));
    const refused = onA.fencedCall('ws_a', 'dev_2', stale, 'c4', done('c4')).then(() => undefined, (e: unknown) => e);
    const again = onA.fencedCall('ws_a', 'dev_1', epoch, 'c1', async (_tx, call) => call?.state);
    assert.deepEqual(await Promise.all(written), ['c3', 'c1', 'c2']);
    const e = await refused;
    assert.ok(e instanceof StaleSessionError && e.deviceId === 'dev_2' && e.epoch === stale, 'device 2\'s write refused');
    assert.equal(await again, 'succeeded', 'the second write to c1 ran after the first had committed');
    assert.equal(transactions.n, 2, 'one transaction for the turn\'s writes, one for c1\'s second');
    const xmins = await writers(a!, ['c1', 'c2', 'c3']);
    assert.equal(new Set(xmins).size, 1, `c1, c2 and c3 written by one PostgreSQL transaction (xmin ${xmins.join(', ')})`);
    assert.equal((await a!.store.getCall('ws_a', 'c4'))?.state, 'submitted', 'nothing written for the replaced session');
    await until(() => ['c1', 'c2', 'c3'].every((id) => b!.heard.some((m) => m.type === 'call_changed' && m.call_id === id)), 5_000, 'every written call told');
    assert.equal(b!.heard.some((m) => m.type === 'call_changed' && m.call_id === 'c4'), false, 'the refused write tells nobody');
  }));

test('a store failure in a batch of fenced writes fails every write of the batch, none written', () =>
  withNodes(server, ['node_a'], async ([a]) => {
    const onA = sessionsOf(a!);
    for (const id of ['c1', 'c2', 'c3']) await a!.store.insertCall(aCall({ call_id: id }));
    const epoch = await onA.claim('ws_a', 'dev_1');
    const save = (id: string, payload = '{}') => onA.fencedCall('ws_a', 'dev_1', epoch, id, async (tx, call) => {
      await tx.saveCall(aCall({ call_id: id, device_id: call!.device_id, state: 'succeeded', outcome: { state: 'succeeded' } as never }));
      // PostgreSQL refuses a NOTIFY payload of 8000 bytes or more: the batch's COMMIT fails.
      await tx.notify('aios_test', payload);
    });
    const results = await Promise.allSettled([save('c1'), save('c2', 'x'.repeat(9000)), save('c3')]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
    for (const id of ['c1', 'c2', 'c3']) assert.equal((await a!.store.getCall('ws_a', id))?.state, 'submitted', `${id} not written`);
    // The node's next batch works.
    await save('c1');
    assert.equal((await a!.store.getCall('ws_a', 'c1'))?.state, 'succeeded');
  }));
