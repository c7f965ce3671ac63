/**
 * The MCP-against-HTTP benchmark (bench/mcp-bridge.ts) runs end to end with tiny counts: a bridge and an agent
 * in their own processes answer `device.info` both ways correctly, and it reports numbers. No timing
 * assertions: performance is measured by `npm run bench:mcp`, never by tests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MCP_BENCH_TARGETS, formatMcpReport, runMcpBench } from '../../bench/mcp-bridge.js';
import { slow } from '../helpers/wait.js';

test('bench:mcp runs with tiny counts and reports p50 and throughput for both ways and for both clients against canned answers, and the ratios', { timeout: slow(120_000) }, async () => {
  const counts = { warmup: 2, latencyN: 5, throughputN: 10, concurrency: 4, rounds: 1 };
  const r = await runMcpBench(counts);
  // Both ways through the bridge, and the same two clients against canned answers (their own floor).
  assert.deepEqual(r.results.map((x) => x.name), [...MCP_BENCH_TARGETS]);
  assert.ok(Number.isFinite(r.clientExtraOfHttpP50));
  for (const x of r.results) {
    assert.equal(x.latency.n, 5);
    assert.equal(x.throughput.total, 10);
    for (const v of [x.latency.p50Us, x.throughput.callsPerS]) assert.ok(Number.isFinite(v) && v > 0, `${x.name}: ${v}`);
  }
  assert.ok(Number.isFinite(r.p50Ratio) && r.p50Ratio > 0);
  assert.match(formatMcpReport(r, counts), /MCP p50 \/ HTTP API p50 +\d+\.\d\d× +\(target ≤ 1\.3: (met|not met)\)/);
  assert.match(formatMcpReport(r, counts), /SDK client's own extra at p50 +-?\d+\.\d\d× the HTTP API's p50/);
  assert.match(formatMcpReport(r, counts), /load average \(1 min\) +\d+\.\d\d before, \d+\.\d\d after/);
});
