/** The "offline for a while" notice, with a manual clock: a short disconnect shows nothing, a long one one notice. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DisconnectNotice, DISCONNECT_NOTICE_MS, type NoticeClock } from '../../electron/disconnect-notice.js';

/** A clock that only moves when the test says so. */
function manualClock() {
  let now = 0;
  let next = 1;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const clock: NoticeClock = {
    setTimeout(fn, ms) {
      const id = next++;
      timers.set(id, { at: now + ms, fn });
      return id;
    },
    clearTimeout(h) {
      timers.delete(h as number);
    },
  };
  return {
    clock,
    pending: () => timers.size,
    advance(ms: number) {
      now += ms;
      for (const [id, t] of [...timers].sort((a, b) => a[1].at - b[1].at)) {
        if (t.at > now) continue;
        timers.delete(id);
        t.fn();
      }
    },
  };
}

test('a disconnect shorter than 60 s shows nothing', () => {
  const c = manualClock();
  let shown = 0;
  const n = new DisconnectNotice(() => shown++, c.clock);
  n.update(true);
  n.update(false);
  c.advance(DISCONNECT_NOTICE_MS - 1);
  n.update(true);
  c.advance(10 * DISCONNECT_NOTICE_MS);
  assert.equal(shown, 0);
  assert.equal(c.pending(), 0, 'the timer was cancelled');
});

test('a disconnect longer than 60 s shows one notice, however long it lasts and however often the state repeats', () => {
  const c = manualClock();
  let shown = 0;
  const n = new DisconnectNotice(() => shown++, c.clock);
  n.update(true);
  n.update(false);
  c.advance(30_000);
  n.update(false); // connecting → offline → connecting: still the same disconnect
  n.update(false);
  assert.equal(shown, 0);
  c.advance(30_000);
  assert.equal(shown, 1, 'at 60 s');
  for (let i = 0; i < 10; i++) {
    n.update(false);
    c.advance(DISCONNECT_NOTICE_MS);
  }
  assert.equal(shown, 1, 'a single notice per disconnect');
  // Back, then down again for long: a new notice.
  n.update(true);
  n.update(false);
  c.advance(DISCONNECT_NOTICE_MS);
  assert.equal(shown, 2);
});

test('quiet down times (a stop that has its own notice) start no timer; dispose cancels a pending one', () => {
  const c = manualClock();
  let shown = 0;
  const n = new DisconnectNotice(() => shown++, c.clock);
  n.update(false);
  assert.equal(n.pending, true);
  n.update(false, true);
  assert.equal(n.pending, false);
  c.advance(5 * DISCONNECT_NOTICE_MS);
  assert.equal(shown, 0);
  n.update(false);
  n.dispose();
  c.advance(5 * DISCONNECT_NOTICE_MS);
  assert.equal(shown, 0);
});

test('the real clock: a short delay fires once', async () => {
  let shown = 0;
  // The system clock unrefs its timer: this one keeps the test process alive until the notice fires.
  const keep = setTimeout(() => undefined, 30_000);
  await new Promise<void>((resolve) => {
    const n = new DisconnectNotice(() => {
      shown++;
      resolve();
    }, undefined, 5);
    n.update(false);
    n.update(false);
  });
  clearTimeout(keep);
  assert.equal(shown, 1);
});
