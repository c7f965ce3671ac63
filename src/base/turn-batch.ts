/**
 * Requests of one event-loop turn handled together (issue 34: one statement for a turn's requests instead of
 * one each, since every statement costs the database CPU). The first request of a turn schedules the batch
 * with `setImmediate`, so that every request of the turn joins it. By default one batch runs at a time, and
 * what comes meanwhile goes in the next one; `parallel` batches (reads) each start at the end of their turn.
 */

/** Options of {@link TurnBatch}. */
export interface TurnBatchOptions<I, O> {
  /** Handles one batch: one answer per item, in the order given. A throw fails every item of the batch. */
  run: (items: I[]) => Promise<O[]>;
  /** The most items one batch holds; more wait for the next. */
  max: number;
  /** Items with the same key never share a batch: the second waits for the next (one at a time: after the first is done). */
  key?: (item: I) => string;
  /**
   * A batch starts at the end of its turn even while earlier ones run (for reads, which need no order: a
   * request coming while a batch runs would otherwise wait a round trip for it).
   */
  parallel?: boolean;
}

/** An item waiting for its batch. */
interface Queued<I, O> {
  item: I;
  resolve: (v: O) => void;
  reject: (e: unknown) => void;
}

/** A queue that hands the items of one turn to `run` together, and each item its own answer. */
export class TurnBatch<I, O> {
  private queue: Queued<I, O>[] = [];
  /** A batch is scheduled or running. */
  private batching = false;

  constructor(private readonly o: TurnBatchOptions<I, O>) {
    // Parallel batches cannot keep two items with one key apart: a later batch would not wait for the first.
    if (o.parallel && o.key) throw new Error('TurnBatch: `key` needs one batch at a time (not `parallel`)');
  }

  /** Queues `item` for the next batch; resolves with its answer, or rejects with what failed its batch. */
  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** At the end of this turn, unless a batch is scheduled (or, one at a time, running). */
  private schedule(): void {
    if (this.batching) return;
    this.batching = true;
    setImmediate(() => void this.next());
  }

  private async next(): Promise<void> {
    const batch: Queued<I, O>[] = [];
    const rest: Queued<I, O>[] = [];
    const keys = new Set<string>();
    for (const q of this.queue) {
      const k = this.o.key?.(q.item);
      if (batch.length < this.o.max && (k === undefined || !keys.has(k))) {
        if (k !== undefined) keys.add(k);
        batch.push(q);
      } else rest.push(q);
    }
    this.queue = rest;
    if (this.o.parallel) this.done();
    try {
      const out = await this.o.run(batch.map((q) => q.item));
      for (const [i, q] of batch.entries()) q.resolve(out[i]!);
    } catch (e) {
      for (const q of batch) q.reject(e);
    }
    if (!this.o.parallel) this.done();
  }

  /** The batch taken (parallel) or done (one at a time): the next one is scheduled if anything waits. */
  private done(): void {
    this.batching = false;
    if (this.queue.length) this.schedule();
  }
}
