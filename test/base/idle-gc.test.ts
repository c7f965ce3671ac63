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
