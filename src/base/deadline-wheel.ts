/**
 * Deadlines of many things on one timer (issue 32: no timer and no closure per call). A deadline is
 * rounded up to the wheel's slot (`slotMs`): it fires no earlier than asked and at most one slot later
 * (plus whatever the event loop adds). Entries due in the same slot share one Set; the slots wait in a
 * min-heap of their numbers, and one timer is armed for the earliest. Entries are the caller's own
 * objects, handed back to the one `onDue` given at construction, so adding one allocates nothing of its own.
 * As a timer per entry did, the wheel keeps the process alive while an entry waits, and not once none does.
 */
import { clampTimerMs } from './timers.js';

/** The wheel's time and its one timer; tests pass a manual one. */
export interface WheelClock {
  /** Now, in milliseconds (any origin, never going back). */
  now(): number;
  /** Runs `fn` once, `ms` from now. */
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(timer: unknown): void;
  /** Whether `timer` keeps the process alive (a new one does). */
  keepAlive(timer: unknown, on: boolean): void;
}

/** `performance.now()` and a Node timer. */
export const realWheelClock: WheelClock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => setTimeout(fn, clampTimerMs(ms)),
  clearTimer: (t) => clearTimeout(t as NodeJS.Timeout),
  keepAlive: (t, on) => void (on ? (t as NodeJS.Timeout).ref() : (t as NodeJS.Timeout).unref()),
};

/** The default slot: fine enough for call budgets (their smallest useful value is tens of ms). */
export const DEFAULT_SLOT_MS = 10;

/** Deadlines for entries of type `T`; each due entry is passed to `onDue` once. */
export class DeadlineWheel<T> {
  /** Entries by slot number (a slot ends at `slot * slotMs` on the clock). */
  private readonly slots = new Map<number, Set<T>>();
  /** The slot numbers of `slots`, as a binary min-heap (each once). */
  private readonly heap: number[] = [];
  private timer: unknown;
  /** The slot the timer is armed for, while it is. */
  private armedSlot: number | undefined;
  private count = 0;

  constructor(
    private readonly onDue: (entry: T) => void,
    private readonly slotMs = DEFAULT_SLOT_MS,
    private readonly clock: WheelClock = realWheelClock,
  ) {}

  /** Entries waiting for their deadline. */
  get size(): number {
    return this.count;
  }

  /** `entry` is due `ms` from now; returns the ticket `delete` takes. An entry is added at most once at a time. */
  add(entry: T, ms: number): number {
    const slot = Math.ceil((this.clock.now() + clampTimerMs(ms)) / this.slotMs);
    let due = this.slots.get(slot);
    if (!due) {
      due = new Set();
      this.slots.set(slot, due);
      heapPush(this.heap, slot);
    }
    due.add(entry);
    this.count++;
    if (this.armedSlot === undefined || slot < this.armedSlot) this.arm();
    else if (this.count === 1) this.clock.keepAlive(this.timer, true);
    return slot;
  }

  /** `entry` (added with `ticket`) no longer has a deadline; nothing happens if it already fired. */
  delete(entry: T, ticket: number): void {
    // An emptied slot stays until its time (or the next arming): a slot refilled meanwhile is not pushed twice.
    if (!this.slots.get(ticket)?.delete(entry)) return;
    // Nothing waits: the timer (armed for an emptied slot) no longer holds the process.
    if (--this.count === 0 && this.timer !== undefined) this.clock.keepAlive(this.timer, false);
  }

  /** The timer: every slot that has ended fires, in order, then the timer is armed for the next. */
  private readonly fire = (): void => {
    this.timer = undefined;
    this.armedSlot = undefined;
    // A timer may run a little before its time on this clock: then nothing has ended yet and it is re-armed.
    const ended = Math.floor(this.clock.now() / this.slotMs);
    let failure: { e: unknown } | undefined;
    while (this.heap.length && this.heap[0]! <= ended) {
      const slot = heapPop(this.heap);
      const due = this.slots.get(slot)!;
      // Iterated live: an entry deleted by an earlier entry's `onDue` does not fire.
      for (const entry of due) {
        due.delete(entry);
        this.count--;
        try {
          this.onDue(entry);
        } catch (e) {
          failure ??= { e };
        }
      }
      this.slots.delete(slot);
    }
    this.arm();
    // As a throw in a timer of its own would: after every other due entry has fired.
    if (failure) throw failure.e;
  };

  /** Arms the timer for the earliest slot that still holds an entry (dropping emptied ones), or disarms it. */
  private arm(): void {
    while (this.heap.length && this.slots.get(this.heap[0]!)!.size === 0) this.slots.delete(heapPop(this.heap));
    const next = this.heap[0];
    if (next === this.armedSlot) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.armedSlot = next;
    if (next !== undefined) this.timer = this.clock.setTimer(this.fire, next * this.slotMs - this.clock.now());
  }
}

function heapPush(h: number[], v: number): void {
  let i = h.length;
  h.push(v);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (h[parent]! <= v) break;
    h[i] = h[parent]!;
    i = parent;
  }
  h[i] = v;
}

function heapPop(h: number[]): number {
  const top = h[0]!;
  const last = h.pop()!;
  if (h.length) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const c = l + 1 < h.length && h[l + 1]! < h[l]! ? l + 1 : l;
      if (h[c]! >= last) break;
      h[i] = h[c]!;
      i = c;
    }
    h[i] = last;
  }
  return top;
}
