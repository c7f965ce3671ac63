/**
 * The clustered call path (issue 34; src/bridge/cluster/cluster-calls.ts): three real bridge nodes in this
 * process on one private PostgreSQL 15, a real agent and simulated devices (bench/sim-device.ts) on loopback.
 * A device on node A answers a call submitted on node B while node C streams it and cancels another; the same device connecting
 * through node C makes node A close its old session with 4001; and a late answer from the replaced session is
 * refused (fencing), even when node A never heard of the replacement (its bus connection cut).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { silentLogger } from '../../src/base/logger.js';
import { normalizeAgentConfig } from '../../src/config/agent-config.js';
import { startAgent, type RunningAgent } from '../../src/app/start-agent.js';
import type { ClusterNodeServer, ClusterNodeServerOptions } from '../../src/bridge/cluster/node-server.js';
import type { InvokeParams, Outcome } from '../../src/protocol/messages.js';
import { cameFurther } from '../../src/bridge/cluster/cluster-calls.js';
import type { StoredCall } from '../../src/bridge/store.js';
import type { BusMessage } from '../../src/bridge/cluster/bus.js';
import type { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import { aCall } from './store-suite.js';
import type { SimDevice } from '../../bench/sim-device.js';
import { deviceUrl, getCall, simOn, startCluster, submit, within, type Tokens } from '../helpers/cluster.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { sseEvents } from '../helpers/sse.js';
import { agentDoc, ids, tempDir, tokens } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

/** Three nodes on a fresh database, the store seen from outside, and the tokens they share. */
async function cluster(t: Tokens, opts: Partial<Record<'node_a' | 'node_b' | 'node_c', Partial<ClusterNodeServerOptions>>> = {}) {
  const c = await startCluster(server, 'calls', t, ['node_a', 'node_b', 'node_c'], opts);
  return { ...c, nodes: c.nodes as [ClusterNodeServer, ClusterNodeServer, ClusterNodeServer], urls: c.urls as [string, string, string] };
}

/** A real agent whose bridge is `url`. */
function agentOn(dir: string, url: string, t: Tokens): Promise<RunningAgent> {
  return startAgent(normalizeAgentConfig(agentDoc(dir, url, t)), silentLogger(), { backoff: { baseMs: 20, capMs: 200, resetAfterMs: 60_000 } });
}

test('a device on node A answers a call submitted on node B; SSE and a waiting retry on node C see it live; node C cancels a call running at node A; a device on no node is 409 device_offline on every node', async () => {
  const t = tokens();
  const dir = tempDir();
  const c = await cluster(t);
  const [urlA, urlB, urlC] = c.urls;
  let running: RunningAgent | undefined;
  try {
    for (const url of c.urls) {
      const off = await submit(url, t, { function: 'diagnostics.echo', arguments: { value: 1 } });
      assert.equal(off.status, 409, JSON.stringify(off.body));
      assert.equal(off.body.error?.type, 'device_offline');
    }
    running = await agentOn(dir, urlA, t);
    await until(async () => (await c.store.session(ids.workspace_id, ids.device_id))?.node_id === 'node_a', 10_000, 'the agent\'s session claimed by node A');
    // Every node lists the device online, with the functions node A read from it.
    const device = async (url: string) => (await (await fetch(`${url}/v1/devices/${ids.device_id}`, { headers: { authorization: `Bearer ${t.runtime}` } })).json()) as { online: boolean; protocol_version: string | null; functions: { id: string }[] };
    const onC = await until(async () => {
      const d = await device(urlC);
      return d.functions.some((f) => f.id === 'diagnostics.wait') ? d : undefined;
    }, 10_000, 'the device\'s functions, seen from node C');
    assert.equal(onC.online, true);
    const onA = await device(urlA);
    assert.equal(typeof onA.protocol_version, 'string');
    assert.equal(onC.protocol_version, onA.protocol_version, 'every node shows the version the session agreed (it is in the session\'s row)');

    const sub = await submit(urlB, t, { function: 'diagnostics.wait', arguments: { ms: 1500, steps: 3 } });
    assert.equal(sub.status, 202, JSON.stringify(sub.body));
    const id = sub.body.call_id;
    // Opened while the device runs the call: what C streams comes through the bus, not from a replay.
    const sse = sseEvents(`${urlC}/v1/calls/${id}/events`, t.runtime);
    sse.done.catch(() => undefined); // awaited below
    const retried = submit(urlC, t, { function: 'diagnostics.wait', arguments: { ms: 1500, steps: 3 }, call_id: id, wait: true });
    retried.catch(() => undefined); // awaited below; a failure before that is reported there
    const events = await within(sse.done, 20_000, 'the SSE stream on node C to end with the outcome');
    const names = events.map((e) => `${e.event}${e.data['replay'] ? '(replay)' : ''}:${String(e.data['state'] ?? '')}`);
    const terminal = events.find((e) => e.event === 'state' && e.data['state'] === 'completed');
    assert.ok(terminal, names.join(' '));
    assert.equal(terminal.data['replay'], undefined, `the outcome reached node C live: ${names.join(' ')}`);
    assert.ok(events.some((e) => e.event === 'state' && e.data['state'] === 'running'), names.join(' '));
    // Progress reaches node C too: the owner writes the latest note to the record, and C reads it from there.
    const progress = events.filter((e) => e.event === 'progress');
    assert.ok(progress.length >= 1, `a progress note reached node C: ${names.join(' ')}`);
    assert.equal(progress[0]!.data['call_id'], id);
    assert.equal(progress[0]!.data['total'], 3);
    assert.ok(progress.every((p, i) => i === 0 || Number(p.data['progress']) > Number(progress[i - 1]!.data['progress'])), 'in order, never repeated');
    const outcome = events.at(-1);
    assert.equal(outcome?.event, 'outcome');
    assert.equal(outcome?.data['state'], 'completed');
    assert.ok(Number((outcome?.data['output'] as { waited_ms: number }).waited_ms) >= 1400);

    const w = await within(retried, 20_000, 'the waiting retry on node C');
    assert.equal(w.status, 200, JSON.stringify(w.body));
    assert.equal(w.body.outcome?.state, 'completed');
    assert.equal(w.body.outcome?.replayed, true, 'a retry of the call id is the same call');
    const rec = await getCall(urlB, t, id);
    assert.equal(rec.state, 'completed');
    assert.deepEqual(rec.outcome?.output, outcome?.data['output']);

    // Cancelled through node C while it runs on the device at node A: node C tells node A, which asks the device.
    const long = await submit(urlB, t, { function: 'diagnostics.wait', arguments: { ms: 60_000 } });
    assert.equal(long.status, 202, JSON.stringify(long.body));
    await until(async () => (await getCall(urlB, t, long.body.call_id)).state === 'running', 10_000, 'the long call running on the device');
    const r = await fetch(`${urlC}/v1/calls/${long.body.call_id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${t.runtime}`, 'content-type': 'application/json' }, body: JSON.stringify({ reason: 'not needed' }) });
    const cancelled = (await r.json()) as { state: string; outcome?: Outcome };
    assert.equal(r.status, 200, JSON.stringify(cancelled));
    assert.equal(cancelled.state, 'cancelled', JSON.stringify(cancelled));
    assert.equal(cancelled.outcome?.error?.type, 'cancelled');
  } finally {
    await running?.stop().catch(() => undefined);
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the device connecting through node C makes node A close its session with 4001; a late answer from a replaced session is refused, even when node A missed the replacement', async () => {
  const t = tokens();
  const dir = tempDir();
  // Node A reconnects its bus only after an hour: the test cuts its listening connection and keeps it cut.
  const c = await cluster(t, { node_a: { bus: { backoffMs: 3_600_000, maxBackoffMs: 3_600_000, sweepMs: 0 } } });
  const [urlA, urlB, urlC] = c.urls;
  let running: RunningAgent | undefined;
  const sims: SimDevice[] = [];
  try {
    // 1. A session on node A, replaced through node C by the real agent: A closes it with 4001.
    const old1 = simOn(urlA, t);
    sims.push(old1);
    let code1: number | undefined;
    old1.onclose = (code) => (code1 = code);
    await old1.connect();
    running = await agentOn(dir, urlC, t);
    await until(() => code1, 10_000, 'node A closing the replaced session');
    assert.equal(code1, 4001, 'node A closed the replaced session with 4001');
    await until(async () => (await c.store.session(ids.workspace_id, ids.device_id))?.node_id === 'node_c', 10_000, 'the agent\'s session on node C');
    await running.stop();
    running = undefined;
    await until(async () => !(await c.store.session(ids.workspace_id, ids.device_id)), 10_000, 'the agent\'s session released');

    // 2. A session on node A gets a call submitted on node B, and holds its answer.
    let invoked: InvokeParams | undefined;
    let answerNow!: () => void;
    const held = new Promise<void>((r) => (answerNow = r));
    const old2 = simOn(urlA, t, {
      answer: async (p) => {
        invoked = p;
        await held;
        const now = new Date().toISOString();
        return { call_id: p.call_id, function: p.function, state: 'completed', output: { waited_ms: -1 }, output_valid: true, error: null, replayed: false, accepted_at: now, started_at: now, finished_at: now, duration_ms: 0 } as Outcome;
      },
    });
    sims.push(old2);
    let code2: number | undefined;
    old2.onclose = (code) => (code2 = code);
    await old2.connect();
    const sub = await submit(urlB, t, { function: 'diagnostics.wait', arguments: { ms: 1500, steps: 3 } });
    assert.equal(sub.status, 202, JSON.stringify(sub.body));
    const id = sub.body.call_id;
    await until(() => invoked?.call_id === id, 10_000, 'the invoke on the session at node A');

    // 3. Node A's bus connection is cut (a partition between it and PostgreSQL's notifications)...
    const admin = new pg.Client({ connectionString: c.db });
    await admin.connect();
    try {
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'aios_bridge_listen_node_a'`);
    } finally {
      await admin.end();
    }
    await until(async () => ((await (await fetch(`${urlA}/health`)).json()) as { bus: string }).bus === 'reconnecting', 10_000, 'node A\'s bus cut');
    // ...so it does not hear that the real agent, connecting through node C, replaced its session.
    running = await agentOn(dir, urlC, t);
    await until(async () => (await c.store.session(ids.workspace_id, ids.device_id))?.node_id === 'node_c', 10_000, 'the agent\'s session on node C');
    assert.equal(old2.online, true, 'node A never heard of the replacement: its old session is still open');

    // 4. The replaced session answers late: refused, never written; the call ends with the real device's outcome.
    answerNow();
    // Node A has dealt with the answer once it refused it, or (were it not fenced) once the record holds it.
    const mid = await until(async () => {
      const r = await getCall(urlB, t, id);
      return c.nodes[0].router!.refusedAnswers > 0 || r.outcome ? r : undefined;
    }, 10_000, 'node A dealing with the late answer');
    assert.notDeepEqual(mid.outcome?.output, { waited_ms: -1 }, 'the replaced session\'s answer was not recorded');
    assert.equal(c.nodes[0].router!.refusedAnswers, 1, 'node A refused it');
    const done = await until(async () => {
      const r = await getCall(urlC, t, id);
      return r.outcome ? r : undefined;
    }, 20_000, 'the call ended by the agent on node C');
    assert.equal(done.state, 'completed');
    assert.ok((done.outcome!.output as { waited_ms: number }).waited_ms >= 1400, JSON.stringify(done.outcome));

    // 5. Node A's catch-up scan (it runs after its bus listens again, and every minute) closes the session it
    // missed the replacement of, with 4001; the agent on node C keeps its own.
    assert.equal(code2, undefined);
    await c.nodes[0].router!.catchUp('sweep');
    await until(() => code2, 10_000, 'node A closing the session it missed the replacement of');
    assert.equal(code2, 4001);
    assert.equal((await c.store.session(ids.workspace_id, ids.device_id))?.node_id, 'node_c');
  } finally {
    for (const s of sims) s.close(true);
    await running?.stop().catch(() => undefined);
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a device whose calls its new node could not reconcile (the store failed) is asked again: the call ends with the device\'s outcome, not at its deadline', async () => {
  const t = tokens();
  const c = await cluster(t);
  const [urlA, urlB] = c.urls;
  let invoked: string | undefined;
  let answerNow!: () => void;
  const held = new Promise<void>((r) => (answerNow = r));
  const asked: string[] = [];
  const sim = simOn(urlA, t, {
    urls: [deviceUrl(urlA), deviceUrl(urlB)],
    answer: async (p) => {
      invoked = p.call_id;
      await held;
      const now = new Date().toISOString();
      return { call_id: p.call_id, function: p.function, state: 'completed', output: { waited_ms: 7 }, output_valid: true, error: null, replayed: false, accepted_at: now, started_at: now, finished_at: now, duration_ms: 0 } as Outcome;
    },
    onRequest: (method, params) => {
      if (method === 'aios/call.get') asked.push((params as { call_id: string }).call_id);
    },
  });
  try {
    await sim.connect();
    const sub = await submit(urlB, t, { function: 'diagnostics.wait', arguments: { ms: 1500 }, timeout_ms: 120_000 });
    assert.equal(sub.status, 202, JSON.stringify(sub.body));
    const id = sub.body.call_id;
    await until(() => invoked === id, 10_000, 'the invoke on the session at node A');
    // Node A goes away; the device finishes the call while it is on no node (its answer has nowhere to go).
    await c.nodes[0].stop();
    answerNow();
    await until(() => sim.outcome(id), 10_000, 'the device finishing the call');
    // Node B's store fails the first reading of the device's open calls.
    const store = (c.nodes[1].router as unknown as { o: { store: { openCalls(dev: string): Promise<unknown[]> } } }).o.store;
    const openCalls = store.openCalls.bind(store);
    let reads = 0;
    store.openCalls = (dev) => (++reads === 1 ? Promise.reject(new Error('injected: the store is unreachable')) : openCalls(dev));
    // The device dials node A (gone), then node B.
    await sim.connect().catch(() => sim.connect());
    assert.equal(sim.sessionUrl, deviceUrl(urlB), 'the device is on node B');
    const done = await until(async () => {
      const r = await getCall(urlB, t, id);
      return r.outcome ? r : undefined;
    }, 20_000, 'the call ended with the device\'s outcome');
    assert.equal(done.state, 'completed', JSON.stringify(done.outcome));
    assert.deepEqual(done.outcome!.output, { waited_ms: 7 });
    assert.deepEqual(asked, [id], 'node B asked the device about the call once, on its second pass');
    assert.ok(reads >= 2, `node B read the open calls again after the failure (${reads} reads)`);
  } finally {
    sim.close(true);
    await c.stop();
  }
});

test('the node that writes an outcome hands its own waiter the saved record: no read of the call after its outcome (issue 34)', async () => {
  const t = tokens();
  const c = await startCluster(server, 'calls_own', t, ['node_a']);
  const [urlA] = c.urls as [string];
  // Held until the wait has read the call, so its one read comes before the outcome.
  let answerNow!: () => void;
  const held = new Promise<void>((r) => (answerNow = r));
  const sim = simOn(urlA, t, {
    answer: async (p) => {
      await held;
      const now = new Date().toISOString();
      return { call_id: p.call_id, function: p.function, state: 'completed', output: { echoed: 1 }, output_valid: true, error: null, replayed: false, accepted_at: now, started_at: now, finished_at: now, duration_ms: 0 } as Outcome;
    },
  });
  const store = (c.nodes[0]!.router as unknown as { o: { store: PgBridgeStore } }).o.store;
  const readCall = store.getCall.bind(store);
  const readCalls = store.getCalls.bind(store);
  const reads: string[] = [];
  store.getCall = async (ws, id, forUpdate) => {
    const row = await readCall(ws, id, forUpdate);
    reads.push(row?.outcome ? 'ended' : 'open');
    return row;
  };
  store.getCalls = async (keys) => {
    const rows = await readCalls(keys);
    for (const row of rows) reads.push(row?.outcome ? 'ended' : 'open');
    return rows;
  };
  try {
    await sim.connect();
    const waiting = submit(urlA, t, { function: 'diagnostics.echo', arguments: { value: 1 }, wait: true });
    waiting.catch(() => undefined); // awaited below
    // The owner's read and the wait's first read, both before the outcome.
    await until(() => reads.length >= 2, 10_000, 'the owner and the wait reading the call');
    answerNow();
    const w = await within(waiting, 10_000, 'the waiting submit');
    assert.equal(w.status, 200, JSON.stringify(w.body));
    assert.equal(w.body.outcome?.state, 'completed');
    assert.deepEqual(w.body.outcome?.output, { echoed: 1 });
    // Its own call_changed messages arrive too: wait until the node has heard every one of them (each clears
    // its token), so a read they (wrongly) caused would be counted below.
    const ownWrites = (c.nodes[0]!.router as unknown as { ownWrites: Map<string, number> }).ownWrites;
    await until(() => ownWrites.size === 0, 10_000, 'the node hearing its own call_changed messages');
    assert.deepEqual(reads, ['open', 'open'], 'the node read the call only before its outcome: the waiter got the record the node saved');
  } finally {
    sim.close(true);
    await c.stop();
  }
});

test('a node\'s reads of one turn go in one statement, and so do its `sent` marks (issue 34)', async () => {
  const t = tokens();
  const c = await startCluster(server, 'calls_batch', t, ['node_a']);
  const [urlA] = c.urls as [string];
  const sim = simOn(urlA, t);
  const router = c.nodes[0]!.router as unknown as { o: { store: PgBridgeStore }; onBus(m: BusMessage): void };
  const N = 6;
  const callIds = Array.from({ length: N }, (_, i) => `batch_${i}`);
  try {
    await sim.connect();
    await until(async () => (await c.store.session(ids.workspace_id, ids.device_id))?.node_id === 'node_a', 10_000, 'the device\'s session on node a');
    for (const id of callIds) {
      const params = { call_id: id, function: 'diagnostics.echo', arguments: { value: 1 }, workspace_id: ids.workspace_id, user_id: ids.user_id, device_id: ids.device_id, timeout_ms: 30_000, attempt: 1 };
      await c.store.insertCall(aCall({ call_id: id, workspace_id: ids.workspace_id, device_id: ids.device_id, function: 'diagnostics.echo', params: params as StoredCall['params'], deadline_ms: Date.now() + 60_000 }));
    }
    // The node's statements outside transactions (its reads and marks; an outcome's write is a transaction).
    const statements: string[] = [];
    const pool = router.o.store.pool;
    const query = pool.query.bind(pool) as (...a: unknown[]) => unknown;
    pool.query = ((...a: unknown[]) => {
      const text = a[0];
      statements.push(typeof text === 'string' ? text : String((text as { text?: string }).text));
      return query(...a);
    }) as typeof pool.query;
    // N calls told to the owner in one turn (as when several `call` messages come in one read from the bus).
    for (const id of callIds) router.onBus({ type: 'call', workspace_id: ids.workspace_id, call_id: id });
    await until(async () => (await Promise.all(callIds.map((id) => c.store.getCall(ids.workspace_id, id)))).every((x) => x?.sent && x.outcome), 10_000, 'every call sent and answered');
    const reads = statements.filter((x) => /^\s*SELECT \* FROM bridge_calls WHERE/.test(x));
    const marks = statements.filter((x) => /SET sent = true/.test(x));
    assert.equal(reads.length, 1, `the owner's reads of the turn in one statement, not ${reads.length}`);
    assert.equal(marks.length, 1, `the sent marks of the turn in one statement, not ${marks.length}`);
    assert.equal(sim.invokes, N, 'each call invoked once');
  } finally {
    sim.close(true);
    await c.stop();
  }
});

test('a record a node saved is newer than the one it read before, never than one read after it (cameFurther)', () => {
  const base = { workspace_id: 'ws', call_id: 'c', timeline: [{ state: 'submitted', at: 'a' }] } as unknown as StoredCall;
  const running = { ...base, timeline: [...base.timeline, { state: 'running', at: 'b' }] } as StoredCall;
  const progressed = { ...running, progress: { call_id: 'c', seq: 2 } } as unknown as StoredCall;
  const ended = { ...progressed, outcome: { state: 'completed' }, timeline: [...running.timeline, { state: 'completed', at: 'c' }] } as unknown as StoredCall;
  const beside = { ...ended, device_outcome: { state: 'completed' } } as unknown as StoredCall;
  const resolved = { ...ended, resolved_from: { state: 'unknown', at: 'c' }, timeline: [...ended.timeline, { state: 'completed', at: 'd' }] } as unknown as StoredCall;
  const chain = [base, running, progressed, ended, beside];
  for (let i = 0; i < chain.length; i++) {
    for (let j = 0; j < chain.length; j++) assert.equal(cameFurther(chain[i]!, chain[j]!), i > j, `${i} after ${j}`);
  }
  assert.equal(cameFurther(resolved, ended), true);
  assert.equal(cameFurther(ended, resolved), false);
});
