/**
 * Where audit rows are committed. The CLI and tests write in their own thread. The agent writes in a
 * worker thread with its own connection to the consent database: a row costs the call path a
 * structured clone instead of a SQLite insert (docs/performance.md).
 *
 * Nothing is lost to the worker: a batch stays held until the worker has committed it (a shared
 * counter says which), and if the worker fails or stops, what it did not commit is written here (a
 * batch it was committing at that very moment may then be written twice, never lost).
 * Reads wait (`sync`) until every batch handed over is committed, so a list sees every recorded call.
 */
import { Worker } from 'node:worker_threads';
import type { Db } from './db.js';
import { statement } from '../storage/sqlite.js';

/** The columns of an audit row, in the order `AuditLog.record` builds them. */
export const AUDIT_INSERT = `INSERT INTO audit (call_id, function_id, requester_kind, requester_id, requester_name, workspace_id, user_id,
    args_summary, decision, decided_by, remembered, state, error_type, duration_ms, accepted_at, finished_at, resources, runtime_id, runtime_name)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** Deletes rows finished before the bound parameter (an ISO time). */
export const AUDIT_PRUNE = 'DELETE FROM audit WHERE finished_at < ?';

export type AuditRow = unknown[];

export interface AuditWriter {
  /** Commits (or hands over to be committed) one batch of rows, then prunes before `pruneBefore` if given. */
  write(rows: AuditRow[], pruneBefore?: string): void;
  /** Returns once every batch written so far is committed. */
  sync(): void;
  /** Commits what is left and stops. */
  close(): void;
}

/** Inserts in this thread, one transaction per batch. */
export function inThreadWriter(db: Db): AuditWriter {
  return {
    write(rows, pruneBefore) {
      const insert = statement(db, AUDIT_INSERT);
      db.transaction(() => {
        for (const r of rows) insert.run(...r);
        if (pruneBefore) statement(db, AUDIT_PRUNE).run(pruneBefore);
      })();
    },
    sync: () => undefined,
    close: () => undefined,
  };
}

/** How long a read waits for the worker before it writes the rest itself (ms), by default. */
export const SYNC_WAIT_MS = 5000;

/**
 * How long the worker may sit with nothing to commit before it is stopped (ms), by default: its thread
 * and V8 isolate (≈ 10 MB of RSS, docs/performance.md) are not worth keeping for an agent at rest between uses. The next batch starts
 * a new one (tens of milliseconds, off the call path: the batch waits in the message queue meanwhile).
 */
export const WORKER_IDLE_MS = 10_000;

/** Shared words: the last batch committed, 1 once the worker failed, and a counter bumped on either. */
export const DONE = 0;
export const BROKEN = 1;
export const SIGNAL = 2;

/** `a` comes after `b` in 32-bit batch numbering that wraps around. */
const after = (a: number, b: number): boolean => ((a - b) | 0) > 0;

/**
 * Commits in a worker thread; falls back to `fallback` (and says why through `onError`) when the
 * worker cannot start, fails or does not answer in time.
 */
export class WorkerAuditWriter implements AuditWriter {
  private worker: Worker | undefined;
  private readonly shared = new Int32Array(new SharedArrayBuffer(12));
  private seq = 0;
  /**
   * Batches handed over and not yet known to be committed, as JSON text (one flat string per batch
   * costs the garbage collector nothing to keep).
   */
  private held: { seq: number; json: string; pruneBefore: string | undefined }[] = [];
  /** After a failure: batches the worker did not commit, and later ones, that this thread has not written yet. */
  private backlog: { json: string; pruneBefore: string | undefined }[] = [];
  private failed = false;
  /** The backlog's last write failed (reported once until a write succeeds). */
  private backlogStuck = false;
  /** Stops the worker once it has had nothing to do for `idleMs` (restarted by every batch). */
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly file: string,
    private readonly fallback: AuditWriter,
    private readonly onError: (message: string) => void,
    /** How long a read waits for the worker (a worker started cold on a busy machine may need longer). */
    private readonly syncWaitMs = SYNC_WAIT_MS,
    private readonly idleMs = WORKER_IDLE_MS,
  ) {}

  /** Whether a worker thread is running now (tests, and what the memory at rest depends on). */
  get workerRunning(): boolean {
    return this.worker !== undefined;
  }

  /**
   * Starts the worker, on the first batch: a worker thread costs ≈ 12 MB of memory, which an agent that
   * records no call (idle, or only reads) does not need to pay (issue 21, memory at rest).
   */
  private start(): Worker | undefined {
    if (this.worker || this.failed) return this.worker;
    try {
      const opts = { workerData: { file: this.file, shared: this.shared.buffer } };
      let worker: Worker;
      if (import.meta.url.endsWith('.ts')) {
        // Run from TypeScript sources (tests, tsx): the parent's loader hooks do not reach a worker
        // thread on Node 20, so the worker registers tsx before loading its module.
        const src = new URL('./audit-worker.ts', import.meta.url).href;
        const tsx = import.meta.resolve('tsx/esm/api');
        worker = new Worker(`import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(src)}); })`, { ...opts, eval: true });
      } else {
        worker = new Worker(new URL('./audit-worker.js', import.meta.url), opts);
      }
      this.worker = worker;
      worker.unref();
      // A worker stopped for idleness is no longer `this.worker`: what it says or does after that is not a failure.
      const current = () => this.worker === worker;
      worker.on('message', (m: { error?: string }) => {
        if (m.error && current()) this.fail(`the audit worker could not commit rows: ${m.error}`);
      });
      worker.on('error', (e) => {
        if (current()) this.fail(`the audit worker failed: ${String(e)}`);
      });
      worker.on('exit', (code) => {
        if (!this.failed && code !== 0 && current()) this.fail(`the audit worker exited (${code})`);
      });
    } catch (e) {
      this.worker = undefined;
      this.failed = true;
      this.onError(`the audit worker could not start: ${String(e)}; writing in this thread`);
    }
    return this.worker;
  }

  /** Takes the rows: the worker commits them, or (once it has failed) this thread, now or later. */
  write(rows: AuditRow[], pruneBefore?: string): void {
    if (!this.failed && Atomics.load(this.shared, BROKEN)) this.fail('the audit worker failed', false);
    const worker = this.failed ? undefined : this.start();
    if (this.failed || !worker) {
      this.backlog.push({ json: JSON.stringify(rows), pruneBefore });
      this.writeBacklog();
      return;
    }
    this.seq = (this.seq + 1) | 0;
    const json = JSON.stringify(rows);
    this.held.push({ seq: this.seq, json, pruneBefore });
    worker.postMessage({ seq: this.seq, json, pruneBefore });
    this.forgetCommitted();
    if (this.idleTimer) this.idleTimer.refresh();
    else {
      this.idleTimer = setTimeout(() => this.retireIfIdle(), this.idleMs);
      this.idleTimer.unref();
    }
  }

  /**
   * Stops the worker once every batch handed to it is committed (on this thread's turn, so no batch can
   * be handed over meanwhile); a batch still uncommitted (a slow disk) gives it another period.
   */
  private retireIfIdle(): void {
    this.idleTimer = undefined;
    const worker = this.worker;
    if (!worker || this.failed) return;
    if (after(this.seq, Atomics.load(this.shared, DONE))) {
      this.idleTimer = setTimeout(() => this.retireIfIdle(), this.idleMs);
      this.idleTimer.unref();
      return;
    }
    this.forgetCommitted();
    this.worker = undefined;
    void worker.terminate();
  }

  sync(): void {
    const deadline = performance.now() + this.syncWaitMs;
    while (!this.failed) {
      // Read the signal first: a commit or failure after this read changes it, so the wait below
      // cannot sleep through it.
      const signal = Atomics.load(this.shared, SIGNAL);
      if (!after(this.seq, Atomics.load(this.shared, DONE))) break;
      if (Atomics.load(this.shared, BROKEN)) {
        this.fail('the audit worker failed', false);
        break;
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        this.fail(`the audit worker did not commit within ${this.syncWaitMs} ms`, false);
        break;
      }
      Atomics.wait(this.shared, SIGNAL, signal, left);
    }
    if (this.failed) this.writeBacklog();
    else this.forgetCommitted();
  }

  close(): void {
    clearTimeout(this.idleTimer);
    this.sync();
    if (!this.failed) void this.worker?.terminate();
    this.failed = true;
    this.writeBacklog();
  }

  private forgetCommitted(): void {
    const done = Atomics.load(this.shared, DONE);
    if (this.held.length && !after(this.held[0]!.seq, done)) this.held = this.held.filter((b) => after(b.seq, done));
  }

  /**
   * From now on rows are written here; the batches the worker did not commit go to the backlog, which
   * is written now unless the caller is about to.
   */
  private fail(message: string, writeNow = true): void {
    if (this.failed) return;
    this.failed = true;
    clearTimeout(this.idleTimer);
    void this.worker?.terminate();
    const done = Atomics.load(this.shared, DONE);
    for (const b of this.held) if (after(b.seq, done)) this.backlog.push({ json: b.json, pruneBefore: b.pruneBefore });
    this.held = [];
    this.onError(`${message}; writing in this thread`);
    if (writeNow) this.writeBacklog();
  }

  /** Writes the backlog here, oldest first; what cannot be written now stays for the next attempt. */
  private writeBacklog(): void {
    while (this.backlog.length) {
      const b = this.backlog[0]!;
      try {
        this.fallback.write(JSON.parse(b.json) as AuditRow[], b.pruneBefore);
      } catch (e) {
        if (!this.backlogStuck) this.onError(`audit rows could not be written: ${String(e)}; they are kept and tried again`);
        this.backlogStuck = true;
        return;
      }
      this.backlog.shift();
      this.backlogStuck = false;
    }
  }
}
