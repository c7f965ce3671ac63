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
