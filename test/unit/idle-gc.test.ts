/** The idle collection (issue 32, memory at rest): once after start-up, once after each busy period, never while calls run. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fullCollection, IdleCollector } from '../../src/base/idle-gc.js';

test('collects once the agent has been idle for idleMs, again only after the next call, never while calls run', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let now = 0;
  let busy = false;
  let runs = 0;
  const c = new IdleCollector({ idleMs: 1000, busy: () => busy, collect: () => runs++, now: () => now });
  const advance = (ms: number) => {
    now += ms;
    t.mock.timers.tick(ms);
  };
  advance(5000);
  assert.equal(runs, 0, 'nothing during start-up');
  c.touch();
  advance(999);
  assert.equal(runs, 0, 'not before idleMs');
  advance(1);
  assert.equal(runs, 1, 'once after start-up');
  advance(10_000);
  assert.equal(runs, 1, 'and not again while nothing ran');
  c.touch();
  advance(600);
  c.touch();
  advance(600);
  assert.equal(runs, 1, 'idle is counted from the last call');
  busy = true;
  advance(400);
  advance(5000);
  assert.equal(runs, 1, 'not while a call runs');
  busy = false;
  advance(1000);
  assert.equal(runs, 2, 'once the call is over');
  c.touch();
  c.stop();
  advance(5000);
  assert.equal(runs, 2, 'nothing after stop');
});

test("V8's full collection is available without --expose-gc", () => {
  const gc = fullCollection();
  assert.equal(typeof gc, 'function');
  gc!();
});
