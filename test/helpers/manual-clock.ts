/** A clock for the state notes' window that moves only when a test says so (no real timers). */
import type { NoteClock } from '../../src/agent/state-notes.js';

/** A `NoteClock` driven by `advance`; `scheduled` records every flush asked for (its due time). */
export class ManualClock implements NoteClock {
  private t = 1000;
  private tasks: { at: number; fn: () => void }[] = [];
  /** Every due time ever scheduled, in order. */
  readonly scheduled: number[] = [];

  now(): number {
    return this.t;
  }

  schedule(fn: () => void, atMs: number): void {
    this.scheduled.push(atMs);
    this.tasks.push({ at: atMs, fn });
  }

  /** Moves time on by `ms`, running (in due order) every task that falls due. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      this.tasks.sort((a, b) => a.at - b.at);
      const next = this.tasks[0];
      if (!next || next.at > end) break;
      this.tasks.shift();
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
  }
}
