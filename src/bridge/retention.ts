/**
 * The call records' retention (`call_retention_s`, default 30 days, at least one day): ended calls last changed
 * longer ago than that are removed, in small batches, once an hour. An open call is never removed. At least a
 * day, because a runtime may retry a call id for a day (`dedupe_retention_s`) and the bridge resolves its own
 * `unknown`s for 24 h (§6.8): a call id retried after its record is gone runs as a new call. One implementation
 * for both stores; on a cluster every node sweeps, and rows another node is removing are skipped.
 */
import type { Logger } from '../base/logger.js';

/** How often the sweep runs by default. */
export const RETENTION_SWEEP_MS = 3600_000;
/** Rows removed per statement: short transactions, so calls being written meanwhile never wait long. */
const BATCH = 500;

export interface CallRetentionOptions {
  /** Removes at most `limit` ended calls last changed before `beforeIso`; returns how many. */
  prune(beforeIso: string, limit: number): number | Promise<number>;
  retentionS: number;
  log: Logger;
  /** How often the sweep runs (default 1 h; 0: only when `sweep()` is called). */
  everyMs?: number;
  now?: () => number;
}

export class CallRetention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopped = false;

  constructor(private readonly o: CallRetentionOptions) {
    const every = o.everyMs ?? RETENTION_SWEEP_MS;
    if (every > 0) {
      this.timer = setInterval(() => void this.sweep(), every);
      this.timer.unref();
    }
  }

  /**
   * Removes every ended call older than the retention, a batch at a time, yielding between batches; returns how
   * many (0 when the store could not be reached: logged, and the next sweep tries again). Sweeps never overlap.
   */
  sweep(): Promise<number> {
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<number> {
    const before = new Date((this.o.now?.() ?? Date.now()) - this.o.retentionS * 1000).toISOString();
    let removed = 0;
    try {
      for (;;) {
        if (this.stopped) break;
        const n = await this.o.prune(before, BATCH);
        removed += n;
        if (n < BATCH) break;
        await new Promise((r) => setImmediate(r));
      }
    } catch (e) {
      this.o.log.warn({ err: String(e), removed }, 'the call retention sweep failed; the next one tries again');
    }
    if (removed) this.o.log.info({ removed, before }, 'removed ended calls past their retention');
    return removed;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}
