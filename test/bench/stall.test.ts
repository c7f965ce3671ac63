/**
 * `npm run bench:stall` runs end to end with tiny counts: a prefilled journal, a real agent child that
 * samples its event loop, a sustained run, a report. No timing assertions (performance lives in bench/).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatStall, runStall } from '../../bench/journal-stall.js';
import { slow } from '../helpers/wait.js';

test('the stall benchmark runs with tiny counts and reports the delays of its run', { timeout: slow(180_000) }, async () => {
  const r = await runStall({ calls: 300, prefill: 50, concurrency: 8, warmup: 10, rounds: 1, sync: 'normal', nice: 0 });
  assert.equal(r.rounds.length, 1);
  const round = r.rounds[0]!;
  assert.ok(round.windows >= 1, 'the agent reported windows of the run');
  assert.ok(Number.isFinite(round.maxDelayMs) && round.maxDelayMs > 0, String(round.maxDelayMs));
  if (process.platform === 'linux') assert.ok(Number.isFinite(round.maxOnCpuDelayMs) && round.maxOnCpuDelayMs >= 0, String(round.maxOnCpuDelayMs));
  assert.ok(round.callsPerS > 0);
  assert.equal(r.prioritized, false, 'nice 0 leaves the priority');
  assert.match(formatStall(r), /longest event-loop delay .* ms \(target ≤ 20 ms\)/);
});
