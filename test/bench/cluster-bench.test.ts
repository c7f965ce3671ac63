/**
 * The clustered bridge's benchmark (bench/cluster.ts, issue 34) runs end to end with tiny counts on a private
 * PostgreSQL: the single process and clusters of one and three nodes answer calls through a real agent, the
 * NOTIFYs per call are counted, PostgreSQL's floor under a call is measured, a SIGKILLed node's simulated devices move to the survivors (through their list
 * of node addresses), every device comes back after the whole cluster is killed and started again, and the
 * targets table has its six rows. No timing is asserted: figures are the benchmark's, never a test's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatCluster, runCluster } from '../../bench/cluster.js';
import { CLUSTER_FIGURES } from '../../bench/targets.js';
import { slow } from '../helpers/wait.js';

test('bench:cluster at tiny counts: every part produces its figures, and every device comes back', { timeout: slow(600_000) }, async () => {
  const r = await runCluster({
    parts: ['calls', 'notify', 'floor', 'loss', 'restart'],
    counts: { warmup: 5, latencyN: 10, throughputN: 20, concurrency: 4, rounds: 1 },
    lossDevices: 12,
    restartDevices: 9,
    workers: 1,
    connectConcurrency: 16,
    // Tests only: the figures are not the point here.
    pgFsync: false,
    pgSyncCommit: true,
    backLimitMs: 180_000,
  });
  const finite = (v: number | undefined, what: string) => assert.ok(v !== undefined && Number.isFinite(v) && v > 0, `${what}: ${v}`);

  assert.deepEqual(r.calls?.paths.map((p) => p.name), ['single process (SQLite)', 'cluster, 1 node', 'cluster, 3 nodes (submitted on another node)']);
  for (const p of r.calls!.paths) {
    finite(p.p50_us, `${p.name} p50`);
    finite(p.calls_per_s, `${p.name} throughput`);
  }
  for (const p of r.calls!.paths.slice(1)) {
    finite(p.p50_ratio, `${p.name} p50 ratio`);
    finite(p.throughput_ratio, `${p.name} throughput ratio`);
    // At least the call to its owner; the outcome tells the nodes as well.
    assert.ok(p.notifies_per_call !== undefined && p.notifies_per_call >= 1, `${p.name}: ${p.notifies_per_call} NOTIFYs per call`);
  }

  finite(r.notify?.plain.tx_per_s, 'commits/s without NOTIFY');
  finite(r.notify?.notify.tx_per_s, 'commits/s with NOTIFY');
  assert.ok(Number.isFinite(r.notify?.serial_extra_us) && Number.isFinite(r.notify?.per_call_us), 'the NOTIFY cost per call');

  // The store operations of a clustered call alone, and their ratio to the single process measured before.
  for (const f of [r.floor?.ops, r.floor?.least]) {
    finite(f?.p50_us, 'a floor p50');
    finite(f?.calls_per_s, 'a floor throughput');
    finite(f?.p50_ratio_to_single, 'a floor p50 against the single process');
  }

  const loss = r.loss!;
  assert.equal(loss.memory.length, 3);
  assert.equal(loss.memory.reduce((s, m) => s + m.devices, 0), 12, 'every device was on a node before the kill');
  assert.ok(loss.victim_devices > 0, 'the killed node held devices');
  assert.equal(loss.back, 12, 'every device is online, none on the killed node');
  assert.ok(loss.back_ms !== null && loss.back_ms >= 0);
  finite(loss.survivors_cpu_ms_per_hello, 'survivors CPU per hello');

  const restart = r.restart!;
  assert.equal(restart.back, 9, 'every device came back after the restart');
  assert.ok(restart.back_after_ready_ms !== null && restart.back_since_kill_ms !== null && restart.back_since_kill_ms >= restart.back_after_ready_ms);
  finite(restart.nodes_ready_ms, 'nodes ready');
  finite(restart.nodes_cpu_ms_per_hello, 'nodes CPU per hello');
  for (const m of restart.memory) assert.ok(m.devices > 0 && m.idle_rss_kb > 0 && m.loaded_rss_kb > 0, m.node_id);

  assert.deepEqual(r.targets.map((t) => t.label), CLUSTER_FIGURES.map((f) => f.label));
  for (const t of r.targets) assert.notEqual(t.verdict, 'not measured in this run', t.label);
  const text = formatCluster(r);
  assert.match(text, /cluster, 3 nodes \(submitted on another node\) +p50 +\d+ µs/);
  assert.match(text, /SIGKILL node_a \(\d+ devices\): all back on the survivors \d+ ms after the kill/);
  assert.match(text, /verdict: \d+ of 6 targets met \(6 measured in this run, 0 not measured\)/);
});
