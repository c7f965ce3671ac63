/**
 * Group commit: writes queued close together are made durable together, in one batch (one `write()` of
 * a log, one SQLite transaction), because a commit costs far more than what it carries (docs/performance.md).
 *
 * A write is queued with `write(item)`, whose promise settles once the batch holding it is durable, or
 * `push(item)` when nobody waits for it. The first write queued after a flush schedules the next one:
 * at the end of the current task (`'task'`, a microtask: the lowest latency for a write alone), at the
 * end of the event-loop turn (`'turn'`, so every write of the turn shares the batch), or after a delay
 * in ms. Batches are written in the order their writes were queued, at most `maxBatch` writes each.
 *
 * A batch whose `commit` throws is not durable, and every writer waiting on it gets that error; or, with
 * `retryMs`, the batch is kept (with everything queued after it) and tried again that much later, its
 * writers told only once it is written. `close()` writes what is queued; later writes are refused.
 *
 * Used by the agent's journal log (`journal-log.ts`), the audit log (`src/consent/audit-log.ts`) and the
 * bridge's call writes (`src/bridge/call-writes.ts`).
 */

/** When a queued batch is written: `'task'` (a microtask), `'turn'` (`setImmediate`) or after a delay in ms. */
export type CommitTiming = 'task' | 'turn' | number;

/** How a GroupCommit writes its batches. */
export interface GroupCommitOptions<T> {
  /** Makes one batch durable, all of it or none; throws when it could not. */
  commit(batch: readonly T[]): void;
  /** When a batch is written, asked when the first write after a flush is queued (default `'turn'`). */
  timing?: () => CommitTiming;
  /** The most writes one batch holds (default 1024); more are written as several batches, in order. */
  maxBatch?: number;
  /**
   * Runs for each write of a batch once it is durable, in order, before its writer is told (e.g. the
   * journal applies the write to its rows); if it throws, that writer alone gets the error.
   */
  applied?(item: T): void;
  /** Told when a batch is taken off the queue, just before its commit. */
  onTaken?(batch: readonly T[]): void;
  /** Told after a batch was committed and its writers told. */
  onWritten?(batch: readonly T[]): void;
  /** A failed batch is kept and committed again after this many ms, instead of failing its writers. */
  retryMs?: number;
  /** Told when a batch failed in a flush this GroupCommit ran by itself (`flush()`'s caller gets the error instead). */
  onError?(e: unknown): void;
  /** The error a write after `close()` gets. */
  closedError?: () => Error;
}

/** A batch of queued writes, with who waits on each (undefined: nobody) and on the batch as a whole. */
interface Batch<T> {
  items: T[];
  resolve: ((() => void) | undefined)[];
  reject: (((e: unknown) => void) | undefined)[];
  /** `settled()` callers: told when the whole batch is written, or failed. */
  after: { resolve: () => void; reject: (e: unknown) => void }[];
}

const DEFAULT_MAX_BATCH = 1024;

/** One group-commit unit: a queue of writes, committed in batches. */
export class GroupCommit<T> {
  private batches: Batch<T>[] = [];
  private closed = false;
  /** Bumped by each schedule and each flush, so a scheduled flush that was overtaken does nothing. */
  private run = 0;
  private scheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private readonly maxBatch: number;

  constructor(private readonly opts: GroupCommitOptions<T>) {
    this.maxBatch = Math.max(1, opts.maxBatch ?? DEFAULT_MAX_BATCH);
  }

  /** True while writes are queued and not yet committed. */
  get pending(): boolean {
    return this.batches.length > 0;
  }

  /** Queues `item`; resolves once its batch is durable (and `applied` ran), rejects with the batch's error. */
  write(item: T): Promise<void> {
    if (this.closed) return Promise.reject(this.closedError());
    return new Promise<void>((resolve, reject) => this.enqueue(item, resolve, reject));
  }

  /** Queues `item` that nobody waits for. Refused (throws) after `close()`. */
  push(item: T): void {
    if (this.closed) throw this.closedError();
    this.enqueue(item, undefined, undefined);
  }

  /**
   * Resolves once every write queued so far is durable; rejects with the error of the batch holding the
   * last of them. At once when nothing is queued.
   */
  settled(): Promise<void> {
    const last = this.batches[this.batches.length - 1];
    if (!last) return Promise.resolve();
    return new Promise<void>((resolve, reject) => last.after.push({ resolve, reject }));
  }

  /**
   * Commits every queued batch now, in order. Throws the first failed batch's error once its writers were
   * told (or, with `retryMs`, once it is kept for the retry, which stops the flush there).
   */
  flush(): void {
    this.run++;
    this.scheduled = false;
    this.clearTimer();
    // The batches queued now; a write queued while they are committed (by `applied` or `onWritten`) waits
    // for the next flush, as any other write would.
    const batches = this.batches;
    this.batches = [];
    let failure: { e: unknown } | undefined;
    for (let i = 0; i < batches.length; i++) {
      const b = batches[i]!;
      this.opts.onTaken?.(b.items);
      try {
        this.opts.commit(b.items);
      } catch (e) {
        if (this.opts.retryMs !== undefined && !this.closed) {
          this.batches = batches.slice(i).concat(this.batches);
          this.schedule(this.opts.retryMs);
          throw e;
        }
        for (const reject of b.reject) reject?.(e);
        for (const w of b.after) w.reject(e);
        failure ??= { e };
        continue;
      }
      this.settle(b);
    }
    if (failure) throw failure.e;
  }

  /** Commits what is queued, then refuses further writes; what could not be committed fails its writers. */
  close(): void {
    if (this.closed) return;
    try {
      this.flush();
    } finally {
      this.closed = true;
      this.run++;
      this.scheduled = false;
      this.clearTimer();
      const left = this.batches;
      this.batches = [];
      for (const b of left) {
        const e = this.closedError();
        for (const reject of b.reject) reject?.(e);
        for (const w of b.after) w.reject(e);
      }
    }
  }

  private enqueue(item: T, resolve: (() => void) | undefined, reject: ((e: unknown) => void) | undefined): void {
    let b = this.batches[this.batches.length - 1];
    if (!b || b.items.length >= this.maxBatch) {
      b = { items: [], resolve: [], reject: [], after: [] };
      this.batches.push(b);
    }
    b.items.push(item);
    b.resolve.push(resolve);
    b.reject.push(reject);
    if (!this.scheduled) this.schedule(this.opts.timing?.() ?? 'turn');
  }

  private settle(b: Batch<T>): void {
    const applied = this.opts.applied;
    for (let i = 0; i < b.items.length; i++) {
      if (applied) {
        try {
          applied(b.items[i]!);
        } catch (e) {
          b.reject[i]?.(e);
          continue;
        }
      }
      b.resolve[i]?.();
    }
    for (const w of b.after) w.resolve();
    this.opts.onWritten?.(b.items);
  }

  private schedule(when: CommitTiming): void {
    this.scheduled = true;
    const run = ++this.run;
    const go = () => {
      if (run !== this.run) return;
      this.timer = undefined;
      this.immediate = undefined;
      try {
        this.flush();
      } catch (e) {
        // The writers of a failed batch were told; with `retryMs` it is kept and the retry is scheduled.
        this.opts.onError?.(e);
      }
    };
    this.clearTimer();
    if (when === 'task') queueMicrotask(go);
    else if (when === 'turn') this.immediate = setImmediate(go);
    else this.timer = setTimeout(go, when).unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private closedError(): Error {
    return this.opts.closedError?.() ?? new Error('closed');
  }
}
