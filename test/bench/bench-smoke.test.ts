/**
 * The benchmarks run end to end with tiny counts: every target starts its real peers (agent child with
 * its journal, bridge, MCP server, echo server), answers its no-op calls correctly, and reports numbers.
 * No timing assertions: performance is measured by `bench/run.ts`, never by tests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBenchmarks, formatReport } from '../../bench/run.js';
import { FIRST_CALL_FUNCTIONS } from '../../bench/targets.js';
import { slow } from '../helpers/wait.js';

const counts = { warmup: 2, latencyN: 5, throughputN: 10, concurrency: 4, rounds: 1 };

test('every benchmark runs with tiny counts and reports numeric results, ratios and the targets table', { timeout: slow(420_000) }, async () => {
  const report = await runBenchmarks({ counts, sync: ['normal', 'full'], log: 'info', fullPath: true, sustained: 20, idleRss: true, idleRssAfterS: 1, variants: [{ label: 'log silent', log: 'silent' }] });
  const names = report.results.map((r) => r.name);
  assert.deepEqual(names, [
    'agent (journal NORMAL, log info)',
    'agent (journal FULL, log info)',
    'agent: log silent',
    'raw ws echo',
    'MCP SDK over stdio',
    'protocol floor 1.1 (2 frames + 2 log writes)',
    'protocol floor 1.0 (4 frames + 2 log writes)',
    "protocol floor 1.1 + the spec's per-call checks",
    'full path (HTTP → bridge → agent, journal NORMAL)',
    'full path (HTTP → bridge → agent, journal NORMAL), 32 in flight',
    'full path floor (HTTP → ws → agent, no storage)',
    'full path floor (HTTP → ws → agent, 2 SQLite commits)',
    'HTTP echo (node:http keep-alive)',
  ]);
  for (const r of report.results) {
    if (r.name.endsWith('32 in flight')) {
      assert.equal(r.latency.n, 0, 'the 32-in-flight target measures throughput only');
      assert.ok(r.throughput.callsPerS > 0);
      assert.equal(r.throughput.concurrency, 32);
      continue;
    }
    for (const v of [r.latency.p50Us, r.latency.p99Us, r.latency.meanUs, r.throughput.callsPerS]) {
      assert.ok(Number.isFinite(v) && v > 0, `${r.name}: ${v} is not a positive number`);
    }
    assert.equal(r.latency.n, counts.latencyN);
    assert.equal(r.throughput.total, counts.throughputN);
    assert.equal(r.throughput.concurrency, counts.concurrency);
  }
  const echo = report.results.find((r) => r.name === 'raw ws echo')!;
  const agent = report.results[0]!;
  // The echo uses the invoke's real frame sizes, measured from the agent's own answer.
  assert.equal(echo.notes?.['request_bytes'], agent.notes?.['request_bytes']);
  assert.equal(echo.notes?.['response_bytes'], agent.notes?.['response_bytes']);
  assert.ok(Number(agent.notes?.['response_bytes']) > 200);
  // 29 before the floor with checks (3 of its own, 2 per agent) and the one variant (3, against the first agent).
  assert.equal(report.ratios.length, 39);
  assert.ok(report.ratios.some((x) => x.label === 'agent: log silent: throughput / agent (journal NORMAL, log info)'));
  for (const x of report.ratios) assert.ok(Number.isFinite(x.value) && x.value > 0, `${x.label}: ${x.value}`);
  assert.ok(report.sustained && report.sustained.agent > 0 && report.sustained.mcp > 0);
  assert.deepEqual(report.idleRss?.map((x) => x.config), ['minimal', 'demo']);
  for (const x of report.idleRss ?? []) assert.ok(x.rssMb > 10, `${x.config}: ${x.rssMb} MB`);
  // Every figure this run measures has a value and a verdict; the bridge-at-scale, stall, allocation and
  // first-call figures come from other benchmarks and say they were not measured.
  const notMeasured = report.targets.filter((t) => t.verdict === 'not measured in this run').map((t) => t.label);
  assert.deepEqual(notMeasured, [
    'bridge: 10 000 idle devices, RSS above idle per device',
    'bridge: all 10 000 reconnected after a restart',
    'stall: longest event-loop delay in the agent, sustained run',
    'agent heap allocated per device.info call (64 in flight)',
    ...FIRST_CALL_FUNCTIONS.map((fn) => `first call − warm call on a fresh agent: ${fn}`),
  ]);
  for (const t of report.targets) if (t.value !== undefined) assert.ok(t.verdict === 'met' || t.verdict === 'not met');
  const text = formatReport(report);
  assert.match(text, /MCP SDK over stdio/);
  assert.match(text, /throughput \/ MCP stdio/);
  assert.match(text, /verdict: \d+ of 21 targets met \(10 measured in this run, 11 not measured\)/);
});

test('the benchmark entry refuses bad flags with a clear message', async () => {
  const { spawnSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const entry = fileURLToPath(new URL('../../bench/run.ts', import.meta.url));
  const r = spawnSync(process.execPath, ['--import', 'tsx', entry, '--sync', 'sometimes'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /--sync must be normal, full or both/);
});

test('--variants refuses a file that is not a list of agent variants, naming the file and the shape', async () => {
  const { spawnSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'aios-variants-'));
  try {
    const file = join(dir, 'v.json');
    writeFileSync(file, JSON.stringify([{ label: 'x', log: 'loud' }]));
    const entry = fileURLToPath(new URL('../../bench/run.ts', import.meta.url));
    const r = spawnSync(process.execPath, ['--import', 'tsx', entry, '--variants', file], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 1);
    assert.ok(r.stderr.includes(`${file}: expected a JSON list of`), r.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
