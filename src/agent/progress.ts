/**
 * Progress notes of one call (PROTOCOL.md §6.2): at most one every 100 ms, the newest value kept when
 * reports come faster, nothing once the call has ended. Made on a call's first report: most calls never
 * report progress.
 */
import type { ProgressNote } from '../protocol/messages.js';
import type { Progress } from '../sdk/index.js';

/** The shortest gap between two progress notes of one call (ten a second). */
export const PROGRESS_INTERVAL_MS = 100;

/** Throttles one call's progress notes. */
export class ProgressThrottle {
  private last = 0;
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private pending: Progress | undefined;

  constructor(
    private readonly callId: string,
    private readonly send: (note: ProgressNote) => void,
    /** True once the call has ended: a late report is dropped. */
    private readonly ended: () => boolean,
  ) {}

  /** A report from the handler: sent now if the last note is old enough, else the newest waits for its slot. */
  report(pr: Progress): void {
    if (this.ended()) return;
    const now = Date.now();
    if (now - this.last >= PROGRESS_INTERVAL_MS && !this.timer) {
      this.emit(pr);
      return;
    }
    this.pending = pr; // keep only the newest; sent at the next slot
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        const x = this.pending;
        this.pending = undefined;
        if (x && !this.ended()) this.emit(x);
      }, Math.max(0, PROGRESS_INTERVAL_MS - (now - this.last)));
    }
  }

  /** The call ended: a report waiting for its slot is not sent. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private emit(x: Progress): void {
    this.last = Date.now();
    this.send({ call_id: this.callId, seq: this.seq++, ...x });
  }
}
