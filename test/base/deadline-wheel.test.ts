/**
 * The deadline wheel (issue 32 item 3): many deadlines on one timer. On a manual clock, every deadline
 * fires, never before it is due and never more than one slot after; deleted ones never fire; an earlier
 * deadline re-arms the one timer. On the real clock, deadlines fire in order and not early (events only).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeadlineWheel, type WheelClock } from '../../src/base/deadline-wheel.js';

/** A clock that moves only when told, running each timer at exactly its time (as Node would at best). */
class ManualClock implements WheelClock {
  t = 1000;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private nextId = 1;
  armed = 0;
  now(): number {
    return this.t;
  }
  setTimer(fn: () => void, ms: number): unknown {
    this.armed++;
    const id = this.nextId++;
    // Node runs a timer of under 1 ms after 1 ms.
    this.timers.set(id, { at: this.t + Math.max(1, ms), fn });
    return id;
  }
  clearTimer(id: unknown): void {
    this.timers.delete(id as number);
    this.unheld.delete(id as number);
  }
  private unheld = new Set<number>();
  keepAlive(id: unknown, on: boolean): void {
    if (on) this.unheld.delete(id as number);
    else this.unheld.add(id as number);
  }
  /** Armed timers that keep the process alive. */
  get holding(): number {
    let n = 0;
    for (const id of this.timers.keys()) if (!this.unheld.has(id)) n++;
    return n;
  }
  get pending(): number {
    return this.timers.size;
  }
  /** Moves to `to`, running every timer due on the way at its own time. */
  advanceTo(to: number): void {
    for (;;) {
      let first: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= to && (!first || e[1].at < first[1].at)) first = e;
      if (!first) break;
      this.timers.delete(first[0]);
      this.t = first[1].at;
      first[1].fn();
    }
    this.t = to;
  }
}

test('every deadline fires once, not before it is due and at most one slot after', () => {
  const clock = new ManualClock();
  const slot = 10;
  const fired = new Map<string, number>();
  const wheel = new DeadlineWheel<string>((k) => {
    assert.ok(!fired.has(k), `${k} fired twice`);
    fired.set(k, clock.now());
  }, slot, clock);
  const due = new Map<string, number>();
  // Odd starting times and delays, added in no particular order, some sharing a slot.
  const delays = [0, 1, 9, 10, 11, 19, 20, 21, 55, 3, 1000, 999, 250, 37, 37, 2 ** 31];
  delays.forEach((ms, i) => {
    clock.advanceTo(clock.t + (i % 3) * 0.7);
    const k = `e${i}`;
    due.set(k, clock.now() + Math.min(ms, 2 ** 31 - 1));
    wheel.add(k, ms);
  });
  assert.equal(wheel.size + fired.size, delays.length, 'each is waiting or has fired (the clock moved while adding)');
  const end = clock.t + 2000;
  while (clock.t < end) clock.advanceTo(clock.t + 0.5);
  for (const [k, at] of due) {
    if (at > end) {
      assert.ok(!fired.has(k), `${k} (due after the run) did not fire`);
      continue;
    }
    const f = fired.get(k);
    assert.ok(f !== undefined, `${k} never fired`);
    assert.ok(f >= at, `${k} fired ${at - f} ms early`);
    assert.ok(f - at <= slot, `${k} fired ${f - at} ms late, more than one ${slot} ms slot`);
  }
  assert.equal(wheel.size, 1, 'only the far deadline still waits');
});

test('a deleted deadline never fires; an earlier one re-arms the timer; many of the same length share one timer', () => {
  const clock = new ManualClock();
  const fired: string[] = [];
  const wheel = new DeadlineWheel<string>((k) => fired.push(k), 10, clock);
  const tickets = new Map<string, number>();
  for (let i = 0; i < 100; i++) {
    tickets.set(`c${i}`, wheel.add(`c${i}`, 5000));
    clock.advanceTo(clock.t + 0.1);
  }
  assert.equal(clock.armed, 1, 'a hundred deadlines of the same length, one timer');
  for (let i = 0; i < 100; i += 2) wheel.delete(`c${i}`, tickets.get(`c${i}`)!);
  assert.equal(wheel.size, 50);
  // An earlier deadline than the armed one: the timer is moved, and it fires on time.
  const t0 = clock.t;
  wheel.add('early', 30);
  clock.advanceTo(t0 + 40);
  assert.deepEqual(fired, ['early']);
  clock.advanceTo(t0 + 6000);
  assert.equal(fired.length, 51);
  for (let i = 0; i < 100; i++) assert.equal(fired.includes(`c${i}`), i % 2 === 1, `c${i}`);
  assert.equal(wheel.size, 0);
  assert.equal(clock.pending, 0, 'no timer left armed once nothing waits');
  // Deleting after it fired changes nothing.
  wheel.delete('c1', tickets.get('c1')!);
  assert.equal(wheel.size, 0);
});

test('all deleted: nothing fires, and the process is held only while a deadline waits', () => {
  const clock = new ManualClock();
  const fired: string[] = [];
  const wheel = new DeadlineWheel<string>((k) => fired.push(k), 10, clock);
  const a = wheel.add('a', 50);
  const b = wheel.add('b', 80);
  wheel.delete('a', a);
  assert.equal(clock.holding, 1, 'b still holds the process');
  wheel.delete('b', b);
  assert.equal(clock.holding, 0, 'nothing waits: the process is not held');
  wheel.add('c', 500);
  assert.equal(clock.holding, 1, 'a new deadline holds it again');
  clock.advanceTo(clock.t + 1000);
  assert.deepEqual(fired, ['c']);
  assert.equal(clock.pending, 0);
});

test('an entry deleted or added by another entry\'s onDue in the same slot is respected', () => {
  const clock = new ManualClock();
  const fired: string[] = [];
  const tickets = new Map<string, number>();
  const wheel: DeadlineWheel<string> = new DeadlineWheel<string>((k) => {
    fired.push(k);
    if (k === 'x') wheel.delete('y', tickets.get('y')!);
    if (k === 'x') tickets.set('z', wheel.add('z', 15));
  }, 10, clock);
  tickets.set('x', wheel.add('x', 20));
  tickets.set('y', wheel.add('y', 20));
  clock.advanceTo(clock.t + 25);
  assert.deepEqual(fired, ['x']);
  clock.advanceTo(clock.t + 30);
  assert.deepEqual(fired, ['x', 'z']);
});

test('a throwing onDue does not stop the other due entries, and the throw is not swallowed', () => {
  const clock = new ManualClock();
  const fired: string[] = [];
  const wheel = new DeadlineWheel<string>((k) => {
    fired.push(k);
    if (k === 'bad') throw new Error('boom');
  }, 10, clock);
  wheel.add('bad', 10);
  wheel.add('good', 10);
  wheel.add('later', 100);
  assert.throws(() => clock.advanceTo(clock.t + 20), /boom/);
  assert.deepEqual(fired.sort(), ['bad', 'good']);
  clock.advanceTo(clock.t + 200);
  assert.ok(fired.includes('later'), 'the wheel is still armed after the throw');
});

test('on the real clock: deadlines fire in order, none early, a deleted one never', async () => {
  const fired: { k: number; at: number }[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  // Each in a slot of its own (within one slot, entries fire in the order they were added).
  const delays = [40, 1, 25, 15, 60];
  const wheel = new DeadlineWheel<number>((k) => {
    fired.push({ k, at: performance.now() });
    if (fired.length === delays.length - 1) done();
  }, 10);
  const due = new Map<number, number>();
  let deletedTicket = 0;
  delays.forEach((ms, k) => {
    due.set(k, performance.now() + ms);
    const ticket = wheel.add(k, ms);
    if (k === 2) deletedTicket = ticket;
  });
  // The 25 ms one goes; the 40 and 60 ms ones fire after its time, so had it fired it would be seen.
  wheel.delete(2, deletedTicket);
  await all;
  assert.deepEqual(fired.map((f) => f.k), [1, 3, 0, 4]);
  for (const f of fired) assert.ok(f.at >= due.get(f.k)!, `${f.k} fired ${due.get(f.k)! - f.at} ms early`);
  assert.equal(wheel.size, 0);
});
