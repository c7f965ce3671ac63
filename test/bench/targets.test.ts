/**
 * The targets table's logic (bench/targets.ts): a figure is met, not met, or not measured, never a
 * made-up number; extra conditions (the reconnect storm's calls) count.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLUSTER_FIGURES, FIGURES, formatVerdicts, verdicts } from '../../bench/targets.js';

test('each figure gets met, not met or not measured from the run', () => {
  const rows = verdicts({ agentCallsPerS: 30_000, mcpCallsPerS: 20_000, agentP50Us: 200, mcpP50Us: 100, idleRssMinimalMb: 69.9, idleRssDemoMb: 71 });
  assert.equal(rows.length, FIGURES.length);
  const by = (label: string) => rows.find((r) => r.label.startsWith(label))!;
  assert.equal(by('agent throughput / MCP stdio (bursts').verdict, 'met');
  assert.equal(by('agent throughput / MCP stdio (bursts').shown, '1.50×');
  assert.equal(by('agent p50 / MCP stdio p50').verdict, 'not met');
  assert.equal(by('headless agent idle RSS 30 s after start, minimal').verdict, 'met');
  assert.equal(by("headless agent idle RSS 30 s after start, the demo's").verdict, 'not met');
  for (const label of ['agent throughput / MCP stdio, sustained', 'full path', 'bridge', 'stall']) {
    assert.equal(by(label).verdict, 'not measured in this run', label);
    assert.equal(by(label).value, undefined);
    assert.equal(by(label).shown, '–');
  }
});

test('the reconnect figure needs the storm calls to complete as well as the time', () => {
  const row = (ok: boolean) => verdicts({ bridgeReconnectS: 12, bridgeStormCallsOk: ok }).find((r) => r.label.includes('reconnected'))!;
  assert.equal(row(true).verdict, 'met');
  assert.equal(row(false).verdict, 'not met');
});

test('the printed table names every figure, its target and the count', () => {
  const text = formatVerdicts(verdicts({ bridgeBytesPerDevice: 25_000 }));
  assert.match(text, /bridge: 10 000 idle devices, RSS above idle per device +25\.0 kB +≤ 20 kB +not met/);
  assert.match(text, /verdict: 0 of 21 targets met \(1 measured in this run, 20 not measured\)/);
});

test("issue 32's rows: 8 KB per device.info call, and 50 ms per handler's first call, each on its own", () => {
  const rows = verdicts({ deviceInfoBytesPerCall: 9000, firstCallExtraMs: { 'device.info': 12, 'bluetooth.state': 51 } });
  const by = (label: string) => rows.find((r) => r.label === label)!;
  assert.equal(by('agent heap allocated per device.info call (64 in flight)').verdict, 'not met');
  assert.equal(by('agent heap allocated per device.info call (64 in flight)').shown, '8.8 KB');
  assert.equal(by('first call − warm call on a fresh agent: device.info').verdict, 'met');
  assert.equal(by('first call − warm call on a fresh agent: bluetooth.state').verdict, 'not met');
  assert.equal(by('first call − warm call on a fresh agent: camera.list').verdict, 'not measured in this run');
  assert.equal(verdicts({ deviceInfoBytesPerCall: 8192 }).find((r) => r.label.startsWith('agent heap'))!.verdict, 'met');
});

test("issue 34's rows: the clustered path as ratios to the single process, node loss and memory per device per node", () => {
  const m = { singleP50Us: 1000, singleCallsPerS: 1000, cluster1P50Us: 1400, cluster1CallsPerS: 800, cluster3P50Us: 1600, cluster3CallsPerS: 650, clusterNodeLossS: 12, clusterBytesPerDevicePerNode: 21_000 };
  const rows = verdicts(m, CLUSTER_FIGURES);
  assert.equal(rows.length, 6);
  const by = (label: string) => rows.find((r) => r.label.startsWith(label))!;
  assert.equal(by('cluster, 1 node: full path p50').shown, '1.40×');
  assert.equal(by('cluster, 1 node: full path p50').verdict, 'met');
  assert.equal(by('cluster, 1 node: throughput').verdict, 'met');
  assert.equal(by('cluster, 3 nodes, call on another node: p50').verdict, 'not met');
  assert.equal(by('cluster, 3 nodes, call on another node: throughput').verdict, 'not met');
  assert.equal(by('cluster: one of three nodes SIGKILLed').verdict, 'met');
  assert.equal(by('cluster: idle RSS per device per node').shown, '21.0 kB');
  assert.equal(by('cluster: idle RSS per device per node').verdict, 'not met');
  // Without the single process's figures there is no ratio, never a made-up one; `npm run bench` leaves the rows out.
  assert.equal(verdicts({ cluster1P50Us: 1400 }, CLUSTER_FIGURES)[0]!.verdict, 'not measured in this run');
  assert.equal(verdicts({}).length, FIGURES.length);
  assert.ok(!FIGURES.some((f) => f.label.startsWith('cluster')));
});
