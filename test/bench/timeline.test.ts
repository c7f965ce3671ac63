/**
 * The round-trip timeline (`npm run bench:timeline`): the segment cutting on made-up stamps, and one real
 * run with tiny counts (agent child recording through the transport's diagnostics channels). No timing
 * assertions beyond what the stamps imply by construction.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cutSegments, formatTimeline, runTimeline, SEGMENTS } from '../../bench/timeline.js';
import { slow } from '../helpers/wait.js';

const us = (x: number) => BigInt(x * 1000);

test('each call is cut into its four segments from the stamps of both sides', () => {
  // Call 1: sent 0, agent got it at 10, wrote 30..35, answered at 50. A stray triple (from before call 2
  // was sent) is skipped; call 2's writev returned after the bridge already had the answer (clamped).
  const sent = [us(0), us(100)];
  const done = [us(50), us(190)];
  const agent = [us(10), us(30), us(35), us(60), us(61), us(62), us(120), us(150), us(200)];
  const r = cutSegments(sent, done, agent);
  assert.equal(r.matched, 2);
  assert.deepEqual(
    r.segments.map((s) => s.name),
    [...SEGMENTS],
  );
  // p50 of two values is the larger one here (index floor(2 × 0.5) = 1).
  assert.deepEqual(r.segments.map((s) => s.p50Us), [20, 30, 40, 15]);
  assert.equal(r.roundTrip.p50Us, 90);
});

test('a call whose agent stamps are missing is not counted', () => {
  const r = cutSegments([us(0), us(100)], [us(50), us(150)], [us(10), us(20), us(30)]);
  assert.equal(r.matched, 1);
  assert.ok(Number.isNaN(cutSegments([us(0)], [us(50)], []).roundTrip.p50Us));
});

test('a real run with tiny counts matches every call and reports CPU per call', { timeout: slow(120_000) }, async () => {
  const o = { warmup: 5, calls: 30, burst: 40, concurrency: 4, log: 'info' as const };
  const r = await runTimeline(o);
  // A stray agent write inside a call's window could cost a match; most must match.
  assert.ok(r.matched >= 27, `only ${r.matched} of 30 calls matched`);
  // Each call's segments add up to its round trip, so no segment's p50 can exceed the round trip's. The
  // last one may be 0: the bridge can finish before the agent's writev returns (then it is clamped).
  r.segments.forEach((s, i) => assert.ok((i < 3 ? s.p50Us > 0 : s.p50Us >= 0) && s.p50Us <= r.roundTrip.p50Us, `${s.name}: ${s.p50Us} µs of ${r.roundTrip.p50Us}`));
  if (process.platform === 'linux') {
    assert.ok(r.cpu, 'no CPU figures on Linux');
    assert.ok(r.cpu.driverUs > 0 && r.cpu.agentMainUs >= 0 && r.cpu.agentOtherThreadsUs >= 0);
  }
  assert.match(formatTimeline(r, o), /round trip/);
});
