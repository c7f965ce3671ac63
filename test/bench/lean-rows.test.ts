/**
 * Issue 32's benchmarks run end to end with tiny counts against real agents (no timing assertions:
 * figures are the benchmark's, never a test's): each handler's first call on a fresh agent answers and
 * yields finite figures; the hot path measures device.info's allocations, and the baselines' (the protocol
 * floor, the MCP SDK server) in their own processes; the memory-at-rest table has a
 * row per handler and the running agent, with RSS growing as modules load.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { measureFirstCalls, formatFirstCalls } from '../../bench/first-call.js';
import { measureBaselineAllocs, measureHotpath } from '../../bench/hotpath.js';
import { DEVICE_INFO_CALL } from '../../bench/agent-roundtrip.js';
import { measureModuleMemory, formatModuleMemory } from '../../bench/module-memory.js';
import { slow } from '../helpers/wait.js';

test('first calls: a fresh agent per function, each answered, with finite figures', { timeout: slow(240_000) }, async () => {
  const rows = await measureFirstCalls({ warm: 2, only: ['device.info', 'files.list_dir'] });
  assert.deepEqual(rows.map((r) => r.fn), ['device.info', 'files.list_dir']);
  for (const r of rows) {
    assert.equal(r.state, 'completed', `${r.fn} answered ${r.state}`);
    for (const v of [r.firstMs, r.warmMs]) assert.ok(Number.isFinite(v) && v > 0, `${r.fn}: ${v}`);
    assert.equal(r.extraMs, r.firstMs - r.warmMs);
  }
  assert.match(formatFirstCalls(rows), /files\.list_dir +first +[\d.]+ ms +warm +[\d.]+ ms/);
});

test('the hot path measures device.info (its output checked) and the heap it allocates', { timeout: slow(240_000) }, async () => {
  const r = await measureHotpath({ calls: 200, call: DEVICE_INFO_CALL });
  assert.equal(r.function, 'device.info');
  assert.ok(r.bytes_per_call > 0 && Number.isFinite(r.bytes_per_call), `bytes per call: ${r.bytes_per_call}`);
  assert.ok(r.calls_per_s > 0);
  assert.ok(r.response_bytes > 200, `response: ${r.response_bytes} B`);
});

test('the baselines\' allocations: the protocol floor and the MCP SDK server, each measured in its own process', { timeout: slow(240_000) }, async () => {
  const r = await measureBaselineAllocs({ calls: 200, responseBytes: 1400 });
  for (const [k, v] of Object.entries(r)) assert.ok(Number.isFinite(v) && v > 0, `${k}: ${v}`);
  // The floor's figure follows what it answers: 64 KB per call allocates more than 1.4 KB.
  const big = await measureBaselineAllocs({ calls: 200, responseBytes: 64 * 1024 });
  assert.ok(big.floor_bytes_per_call > r.floor_bytes_per_call + 32 * 1024, `${big.floor_bytes_per_call} against ${r.floor_bytes_per_call}`);
});

test('memory at rest by module: one row per group, each handler, and the running agent', { timeout: slow(240_000) }, async () => {
  const rows = await measureModuleMemory({ settleMs: 100 });
  const steps = rows.map((r) => r.step);
  for (const h of ['device', 'diagnostics', 'files', 'serial', 'bluetooth', 'printer', 'media']) assert.ok(steps.includes(`handlers/${h}`), h);
  assert.match(steps.at(-1)!, /^the agent started and at rest/);
  for (const r of rows) assert.ok(Number.isFinite(r.addedRssMb) && Number.isFinite(r.addedHeapMb) && r.rssMb > 0, r.step);
  assert.ok(rows.at(-1)!.rssMb > rows[0]!.rssMb, 'loading the agent costs memory');
  assert.match(formatModuleMemory(rows), /handlers\/media/);
});
