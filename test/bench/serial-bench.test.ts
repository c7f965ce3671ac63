/**
 * The serial benchmark runs end to end with tiny counts: its pty pairs, scale process, bridge and agent
 * start, all four targets (with the engine in-process) answer correctly (each call checks its answer) and numbers come out. No
 * timing assertions: performance is measured by `npm run bench:serial`, never by tests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatSerialReport, formatSummary, haltPollNs, runSerialBench, summarise } from '../../bench/serial.js';
import { slow } from '../helpers/wait.js';

test('the serial benchmark runs with tiny counts and reports the target ratio', { timeout: slow(180_000) }, async () => {
  const r = await runSerialBench({ warmup: 2, latencyN: 5, throughputN: 8, concurrency: 2, rounds: 1 });
  assert.deepEqual(r.results.map((x) => x.name), ['raw serialport round trip (pty)', 'device.info, whole path', 'serial.request, whole path', 'serial engine in-process (request on a pooled port)']);
  for (const x of r.results) {
    assert.ok(Number.isFinite(x.latency.p50Us) && x.latency.p50Us > 0, x.name);
    assert.equal(x.throughput.total, 8);
  }
  assert.ok(Number.isFinite(r.overheadRatio));
  assert.ok(Number.isFinite(r.engineRatio));
  // The handler's own timings come from the answers of the measured calls (not the warm-up's).
  assert.ok(r.inAgent.calls > 0 && r.inAgent.totalUs > 0 && r.inAgent.firstByteUs > 0 && r.inAgent.firstByteUs <= r.inAgent.totalUs, JSON.stringify(r.inAgent));
  assert.match(formatSerialReport(r), /this run against the target ≤ 1\.5/);
  // The machine's idle policy is in the header where it has one (a guest's halt-polling), and only there.
  if (r.haltPollNs === null) assert.doesNotMatch(formatSerialReport(r), /halt-polling/);
  else assert.match(formatSerialReport(r).split('\n')[0]!, new RegExp(`guest halt-polling ${r.haltPollNs} ns`));
  assert.match(formatSerialReport(r), /the handler's engine alone adds -?\d+ µs/);
  assert.match(formatSerialReport(r), /serial\.request's handler inside the agent \(its answers' own timings, \d+ calls\): p50 \d+ µs/);
  // The verdict is taken on the median of the runs' ratios (here the same run three times, one changed).
  const worse = { ...r, overheadRatio: r.overheadRatio + 10 };
  const sum = summarise([r, worse, r]);
  assert.equal(sum.medianRatio, r.overheadRatio);
  assert.equal(sum.met, r.overheadRatio <= 1.5);
  assert.match(formatSummary(sum), /3 runs, each with fresh processes/);
  assert.match(formatSummary(sum), new RegExp(`median ratio ${r.overheadRatio.toFixed(2)}`));
});

test('the report names the guest halt-polling time when the machine has one, and nothing otherwise', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aios-haltpoll-'));
  try {
    const f = join(dir, 'guest_halt_poll_ns');
    writeFileSync(f, '200000\n');
    assert.equal(haltPollNs(f), 200000);
    writeFileSync(f, 'n/a\n');
    assert.equal(haltPollNs(f), null);
    assert.equal(haltPollNs(join(dir, 'missing')), null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
