/** The idle collection (issue 32, memory at rest): once after start-up, once after each busy period, never while calls run. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getHeapSpaceStatistics } from 'node:v8';
import { IdleCollector, restCollection, SHRINK_AFTER_MS } from '../../src/base/idle-gc.js';
import { until } from '../helpers/stack.js';

test('collects (young, then young again) once the agent has been idle, again only after the next call, never while calls run', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let now = 0;
  let busy = false;
  const steps: string[] = [];
  const c = new IdleCollector({ idleMs: 1000, busy: () => busy, collect: { young: () => steps.push(`young@${now}`) }, now: () => now });
  const advance = (ms: number) => {
    now += ms;
    t.mock.timers.tick(ms);
  };
  advance(5000);
  assert.deepEqual(steps, [], 'nothing during start-up');
  c.touch();
  advance(999);
  assert.deepEqual(steps, [], 'not before idleMs');
  advance(1);
  assert.deepEqual(steps, ['young@6000'], 'the first young collection after start-up');
  advance(SHRINK_AFTER_MS);
  assert.deepEqual(steps, ['young@6000', `young@${6000 + SHRINK_AFTER_MS}`], 'then the second, SHRINK_AFTER_MS later');
  assert.equal(c.collections, 1);
  advance(60_000);
  assert.equal(steps.length, 2, 'and not again while nothing ran');
  c.touch();
  advance(600);
  c.touch();
  advance(600);
  assert.equal(steps.length, 2, 'idle is counted from the last call');
  busy = true;
  advance(400);
  advance(5000);
  assert.equal(steps.length, 2, 'not while a call runs');
  busy = false;
  advance(1000);
  assert.equal(steps.length, 3, 'once the call is over');
  c.touch();
  advance(SHRINK_AFTER_MS);
  assert.equal(steps.length, 4, 'a call between the two steps starts over: a first collection idleMs after it');
  c.stop();
  advance(SHRINK_AFTER_MS);
  assert.equal(steps.length, 4, 'nothing after stop');
});

test('the collection at rest is available without --expose-gc, and shrinks a grown young generation', async () => {
  const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.physical_space_size;
  // Made before the work, as the agent makes it at start-up (see restCollection).
  const collect = restCollection();
  assert.ok(collect, 'V8 collections are available');
  // Grow the young generation as start-up does (many short-lived objects, some surviving a while).
  const keep: unknown[] = [];
  for (let i = 0; i < 2e6; i++) {
    keep.push({ i, s: 'x' + i });
    if (keep.length > 200_000) keep.length = 0;
  }
  keep.length = 0;
  const grown = young();
  assert.ok(grown > 8e6, `the young generation grew (${grown} bytes)`);
  collect.young();
  // The young collection shrinks it once little was allocated since the last one (V8 looks ≈ 5 s back).
  await until(
    () => {
      collect.young();
      return young() <= 2e6;
    },
    20_000,
    `the young generation shrinks from ${grown} bytes`,
  );
});

test('with compactAboveBytes, a rest compacts the old generation only when its pages grew that much since the last rest', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let now = 0;
  let old = 10e6;
  const steps: string[] = [];
  const told: number[] = [];
  const collect = {
    young: () => steps.push('young'),
    compact: () => {
      steps.push('compact');
      old = 12e6;
    },
    oldBytes: () => old,
  };
  const c = new IdleCollector({ idleMs: 1000, busy: () => false, collect, now: () => now, compactAboveBytes: 8e6, onCompact: (i) => told.push(i.before_bytes, i.after_bytes) });
  const rest = () => {
    c.touch();
    now += 1000;
    t.mock.timers.tick(1000);
    now += SHRINK_AFTER_MS;
    t.mock.timers.tick(SHRINK_AFTER_MS);
  };
  rest();
  assert.deepEqual(steps, ['young', 'young'], 'start-up rest: the mark is set, nothing compacted');
  old = 17e6;
  rest();
  assert.deepEqual(steps.slice(2), ['young', 'young'], 'grown 7 MB: below the threshold');
  old = 18e6;
  rest();
  assert.deepEqual(steps.slice(4), ['young', 'young', 'compact'], 'grown 8 MB since the start-up rest: compacted after the young steps');
  assert.deepEqual(told, [18e6, 12e6]);
  assert.equal(c.compactions, 1);
  old = 19e6;
  rest();
  assert.equal(c.compactions, 1, 'the mark moved to after the compaction (12 MB): 7 MB above it is not enough');
  old = 20e6;
  rest();
  assert.equal(c.compactions, 2);
  c.stop();

  const agent = new IdleCollector({ idleMs: 1000, busy: () => false, collect, now: () => now });
  old = 90e6;
  agent.touch();
  now += 1000;
  t.mock.timers.tick(1000);
  now += SHRINK_AFTER_MS;
  t.mock.timers.tick(SHRINK_AFTER_MS);
  assert.equal(agent.collections, 1);
  assert.equal(agent.compactions, 0, 'without compactAboveBytes (the agent), never');
  agent.stop();
});

test('the compacting collection gives back the old-generation pages that a burst of garbage left half empty', () => {
  const collect = restCollection();
  assert.ok(collect?.compact && collect.oldBytes, 'V8 collections are available');
  const used = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;
  // A hello storm's shape: many objects promoted to the old generation, one in ten long-lived.
  const keep: unknown[] = [];
  const burst = (): number => {
    const all: unknown[] = [];
    for (let i = 0; i < 600_000; i++) {
      const o = { i, s: 'x' + i, b: [i] };
      all.push(o);
      if (i % 10 === 0) keep.push(o);
    }
    return all.length;
  };
  assert.equal(burst(), 600_000);
  collect.young();
  const before = collect.oldBytes();
  collect.compact();
  const after = collect.oldBytes();
  const live = used();
  assert.ok(before - live > 16e6, `the burst left old-generation pages partly empty (${before} bytes of pages, ${live} used)`);
  assert.ok(after <= live * 1.25 + 2e6, `compacted: ${after} bytes of pages for ${live} used (before: ${before})`);
  assert.equal(keep.length, 60_000);
});
