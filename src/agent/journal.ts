/**
 * The persistent call journal (PROTOCOL.md §5, §6.8), as the dispatcher and the session use it:
 * accept-before-execute, replay, tombstones, crash recovery, retention, and the outbox of undelivered
 * outcomes.
 *
 * Its storage (the group-committed log, the SQLite table, the rows held in memory until the table catches
 * up, the id filter) is the engine in `src/storage/journal-engine.ts`; here is what its rows mean to a
 * call. The dispatcher starts a handler only after its accept has resolved, i.e. is in the log, so
 * accept-before-execute holds.
 */
import type { CallState, Outcome } from '../protocol/messages.js';
import { isTerminal } from '../protocol/messages.js';
import { ERRORS } from '../protocol/errors.js';
import type { SyncLevel } from '../storage/sqlite.js';
import { JournalEngine, type ListOptions, type Row, type Scope } from '../storage/journal-engine.js';

export { JOURNAL_MIGRATIONS, JOURNAL_SCHEMA } from '../storage/journal-engine.js';

/** One journal row as the dispatcher sees it. */
export interface JournalRow {
  callId: string;
  function: string;
  argsDigest: string;
  state: CallState;
  outcome: Outcome | undefined;
  tombstone: boolean;
  acceptedAt: string | null;
  startedAt: string | null;
}

const RECOVERABLE_RUNNING: CallState[] = ['running'];
const RECOVERABLE_WAITING: CallState[] = ['accepted', 'awaiting_confirmation'];

/** The call_id is already journalled (a duplicate accept or tombstone). */
export class DuplicateCallError extends Error {
  constructor(callId: string) {
    super(`call ${callId} is already journalled`);
    this.name = 'DuplicateCallError';
  }
}

/** The journal for one device identity (workspace + device). */
export class Journal {
  private readonly engine: JournalEngine;

  constructor(path: string, scope: Scope, sync: SyncLevel = 'NORMAL') {
    this.engine = new JournalEngine(path, scope, sync);
  }

  /** The table's connection (tests and tools read it). */
  get db() {
    return this.engine.db;
  }

  /** The log's path: `<journal path>.log`. */
  get logPath(): string {
    return this.engine.logPath;
  }

  /**
   * True while several calls are in flight: writes then wait for the end of the event-loop turn, so one
   * `write()` serves them all. Alone, a write is logged at the end of the current task (lowest latency).
   */
  get batchHint(): () => boolean {
    return this.engine.batchHint;
  }

  set batchHint(f: () => boolean) {
    this.engine.batchHint = f;
  }

  /** Told about a checkpoint that failed in the background (the agent logs it). */
  get onCheckpointError(): (e: unknown) => void {
    return this.engine.onCheckpointError;
  }

  set onCheckpointError(f: (e: unknown) => void) {
    this.engine.onCheckpointError = f;
  }

  /** Told when a background catch-up has written the table and emptied the log (tests wait on it instead of sleeping). */
  get onBackgroundCheckpoint(): () => void {
    return this.engine.onBackgroundCheckpoint;
  }

  set onBackgroundCheckpoint(f: () => void) {
    this.engine.onBackgroundCheckpoint = f;
  }

  /** Told when a rebuilt id filter has replaced the full one (tests wait on it). */
  get onIdFilterRebuilt(): () => void {
    return this.engine.onIdFilterRebuilt;
  }

  set onIdFilterRebuilt(f: () => void) {
    this.engine.onIdFilterRebuilt = f;
  }

  /** Reads a row synchronously: from memory if the table has not caught up with it, else from the table. */
  get(callId: string): JournalRow | undefined {
    const r = this.engine.get(callId);
    return r ? toJournalRow(r) : undefined;
  }

  /**
   * Journals an accepted call, as `accepted` or directly as `running` when it starts at once; resolves
   * once logged. Rejects if the call_id already exists.
   */
  accept(callId: string, fn: string, digest: string, acceptedAt: string, state: 'accepted' | 'running' = 'accepted', startedAt: string | null = null): Promise<void> {
    if (this.engine.known(callId)) return Promise.reject(new DuplicateCallError(callId));
    return this.engine.accept(callId, fn, digest, acceptedAt, state, startedAt);
  }

  /** Journals a tombstone for a cancel that arrived before its invoke (§6.5). */
  tombstone(callId: string, outcome: Outcome): Promise<void> {
    if (this.engine.known(callId)) return Promise.reject(new DuplicateCallError(callId));
    return this.engine.tombstone(callId, outcome);
  }

  /** Records a non-terminal transition. */
  setState(callId: string, state: CallState, startedAt?: string): Promise<void> {
    return this.engine.setState(callId, state, startedAt);
  }

  /** Records the terminal outcome (undelivered until acknowledged); `json` is the outcome's JSON if already made. */
  finish(outcome: Outcome, delivered = false, json = JSON.stringify(outcome)): Promise<void> {
    return this.engine.finish(outcome, delivered, json);
  }

  /** Marks outcomes as delivered (the bridge acknowledged them). */
  markDelivered(callIds: readonly string[]): Promise<void> {
    return this.engine.markDelivered(callIds);
  }

  /** Puts an outcome back into the outbox (its response could not be sent after all). */
  markUndelivered(callId: string): Promise<void> {
    return this.engine.markUndelivered(callId);
  }

  /** Outcomes not yet acknowledged, oldest first. */
  outbox(limit = 100): Outcome[] {
    return this.engine.outbox(limit).map((j) => JSON.parse(j) as Outcome);
  }

  /** Lists calls for `aios/call.list`, newest first, keyset-paginated by (created_ms, call_id). */
  list(opts: ListOptions): { rows: JournalRow[]; next?: { ms: number; id: string } } {
    const { rows, next } = this.engine.list(opts);
    return { rows: rows.map(toJournalRow), ...(next ? { next } : {}) };
  }

  /**
   * Crash recovery (§5): rows found running become unknown/execution_interrupted (side effects possible);
   * rows that never reached running become failed/execution_interrupted (none). Never re-run.
   * Returns the recovered outcomes (they sit in the outbox).
   */
  recover(now = new Date()): Outcome[] {
    const out: Outcome[] = [];
    const at = now.toISOString();
    for (const r of this.engine.unfinished()) {
      const wasRunning = RECOVERABLE_RUNNING.includes(r.state);
      if (!wasRunning && !RECOVERABLE_WAITING.includes(r.state)) continue;
      out.push({
        call_id: r.callId,
        function: r.fn,
        state: wasRunning ? 'unknown' : 'failed',
        error: {
          code: ERRORS.execution_interrupted.code,
          type: 'execution_interrupted',
          message: wasRunning ? 'The device client stopped while this call was running; its effect is unknown.' : 'The device client stopped before this call started; it did not run.',
          retryable: false,
          side_effects: wasRunning ? 'possible' : 'none',
        },
        replayed: false,
        accepted_at: r.acceptedAt,
        started_at: r.startedAt,
        finished_at: at,
        duration_ms: r.startedAt ? Math.max(0, now.getTime() - Date.parse(r.startedAt)) : null,
      });
    }
    this.engine.finishAll(out.map((o) => ({ callId: o.call_id, state: o.state, json: JSON.stringify(o), finishedAt: at, ms: now.getTime() })));
    return out;
  }

  /** Deletes delivered terminal rows and tombstones older than the retention window. */
  sweep(retentionS: number, now = Date.now()): number {
    return this.engine.sweep(retentionS, now);
  }

  metaGet(key: string): string | undefined {
    return this.engine.metaGet(key);
  }

  metaSet(key: string, value: string): void {
    this.engine.metaSet(key, value);
  }

  /** Brings the table up to date with the log now (reads that scan the table do it themselves). */
  checkpoint(): void {
    this.engine.checkpoint();
  }

  close(): void {
    this.engine.close();
  }
}

function toJournalRow(r: Row): JournalRow {
  const outcome = r.outcomeJson ? (JSON.parse(r.outcomeJson) as Outcome) : undefined;
  return {
    callId: r.callId,
    function: r.fn,
    argsDigest: r.digest,
    state: outcome && isTerminal(outcome.state) ? outcome.state : r.state,
    outcome,
    tombstone: r.tombstone,
    acceptedAt: r.acceptedAt,
    startedAt: r.startedAt,
  };
}
