/**
 * Deadlines that survive a dead owner (issue 34, PROTOCOL 1.2 §6.4): every node's sweeper claims the open calls
 * past their deadline with FOR UPDATE SKIP LOCKED and ends them. A call sent by node A (a real `aios-device
 * bridge` process) to a device that stays silent still ends after node A is SIGKILLed, ended by node B's sweeper
 * with the deadline's outcome; and two nodes sweeping at once never end one call twice. A private PostgreSQL 15.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import type { StoredCall } from '../../src/bridge/store.js';
import type { InvokeParams, Outcome } from '../../src/protocol/messages.js';
import type { SimDevice } from '../../bench/sim-device.js';
import { clusterDatabase, clusterNode, getCall, simOn, startNodeProcess, stopProcess, submit, type NodeProcess } from '../helpers/cluster.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { ids, tempDir, tokens } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

test('a call whose owner node was SIGKILLed ends at its deadline, ended by another node\'s sweeper: unknown, device_offline, source bridge', async () => {
  const t = tokens();
  const db = clusterDatabase(server, 'deadline');
  const dir = tempDir();
  const b = clusterNode(t, db, 'node_b', { deadlineSweepMs: 200, deadlineGraceMs: 500 });
  let a: NodeProcess | undefined;
  let sim: SimDevice | undefined;
  try {
    a = await startNodeProcess(dir, t, db, 'node_a');
    const urlA = a.url;
    const urlB = await b.start();
    // A device that takes the invoke and never answers.
    let invoked: InvokeParams | undefined;
    sim = simOn(urlA, t, {
      answer: (p) => {
        invoked = p;
        return new Promise<Outcome>(() => undefined);
      },
    });
    await sim.connect();
    const submittedAt = Date.now();
    // Deadline: 1 s + 12 s + 5 s after the submit, past the dead node's session lease (15 s).
    const { status, body: sub } = await submit(urlB, t, { function: 'diagnostics.echo', arguments: { value: 1 }, confirm_timeout_ms: 1000, timeout_ms: 12_000 });
    assert.equal(status, 202, JSON.stringify(sub));
    await until(() => invoked?.call_id === sub.call_id, 10_000, 'the invoke at the device on node A');
    const store = await PgBridgeStore.open(db, { max: 1 });
    try {
      await until(async () => (await store.getCall(ids.workspace_id, sub.call_id))?.sent, 10_000, 'node A recording that it sent the call');
    } finally {
      await store.close();
    }

    assert.equal(await a.proc.kill('SIGKILL'), null, 'node A was killed, not stopped');
    const ended = await until(async () => {
      const c = await getCall(urlB, t, sub.call_id);
      return c.outcome ? c : undefined;
    }, 40_000, 'the call ended by node B\'s sweeper');
    assert.equal(ended.state, 'unknown', JSON.stringify(ended));
    assert.equal(ended.outcome?.error?.type, 'device_offline');
    assert.equal(ended.outcome?.error?.side_effects, 'possible');
    assert.deepEqual(ended.outcome?.error?.details, { source: 'bridge' });
    assert.ok(Date.parse(ended.updated_at) >= submittedAt + 18_000 - 1000, `not before its deadline: ${ended.updated_at}`);
    assert.equal(ended.timeline.filter((e) => e.state === 'unknown').length, 1);
  } finally {
    sim?.close(true);
    if (a) await stopProcess(a.proc, 'SIGKILL');
    await b.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('two nodes sweeping at once end each expired call exactly once; open calls before their deadline are left alone', async () => {
  const t = tokens();
  const db = clusterDatabase(server, 'sweep');
  const nodes = [clusterNode(t, db, 'node_a', { deadlineSweepMs: 0, deadlineGraceMs: 0 }), clusterNode(t, db, 'node_b', { deadlineSweepMs: 0, deadlineGraceMs: 0 })];
  const store = await PgBridgeStore.open(db, { max: 2 });
  try {
    for (const node of nodes) await node.start();
    const now = new Date().toISOString();
    const call = (i: number, deadline: number, sent: boolean): StoredCall => ({
      call_id: `c${i}`,
      workspace_id: ids.workspace_id,
      device_id: ids.device_id,
      function: 'diagnostics.echo',
      state: 'submitted',
      created_at: now,
      updated_at: now,
      timeline: [{ state: 'submitted', at: now }],
      args_digest: 'sha256:x',
      params: { call_id: `c${i}`, function: 'diagnostics.echo', arguments: {}, workspace_id: ids.workspace_id, user_id: ids.user_id, device_id: ids.device_id, timeout_ms: 1000, attempt: 1 },
      deadline_ms: deadline,
      bridge_outcome: false,
      sent,
    });
    const expired = 300;
    for (let i = 0; i < expired; i++) await store.insertCall(call(i, Date.now() - 60_000, i % 2 === 0));
    await store.insertCall(call(expired, Date.now() + 3_600_000, true));
    let ended = 0;
    // Both nodes sweep until nothing is left, at the same time.
    await Promise.all(
      nodes.map(async (node) => {
        for (;;) {
          const k = await node.router!.sweepDeadlines();
          ended += k;
          if (k === 0 && (await store.claimExpiredCalls(0, 1)).length === 0) return;
        }
      }),
    );
    assert.equal(ended, expired, 'each expired call ended once');
    for (let i = 0; i < expired; i++) {
      const c = (await store.getCall(ids.workspace_id, `c${i}`))!;
      assert.equal(c.timeline.filter((e) => e.state === c.state).length, 1, `c${i}: one terminal entry`);
      // No live session: sent ones are unknown (device_offline), never sent ones expired.
      assert.deepEqual([c.state, c.outcome?.error?.type, c.outcome?.error?.side_effects], i % 2 === 0 ? ['unknown', 'device_offline', 'possible'] : ['expired', 'device_offline', 'none'], `c${i}`);
    }
    assert.equal((await store.getCall(ids.workspace_id, `c${expired}`))?.outcome, undefined, 'a call before its deadline stays open');
  } finally {
    for (const node of nodes) await node.stop();
    await store.close();
  }
});
