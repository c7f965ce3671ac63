/**
 * The persistent call journal (PROTOCOL.md §5, §6.8): accept-before-execute, replay, tombstones,
 * crash recovery, retention, and the outbox of undelivered outcomes.
 *
 * Writes are grouped: with several calls in flight, every write made in the same event-loop turn joins
 * one transaction committed at the end of the turn; a call alone commits at the end of the current task.
 * A write's promise resolves only after its transaction has committed, and the dispatcher starts a
 * handler only after the accept has resolved, so accept-before-execute holds while 64 concurrent calls
 * pay for a few commits instead of 64.
 */
import type Database from 'better-sqlite3';
import { openDatabase, migrate, type Migration, type SyncLevel } from '../storage/sqlite.js';
import type { CallState, Outcome } from '../protocol/messages.js';
import { isTerminal } from '../protocol/messages.js';
import { ERRORS } from '../protocol/errors.js';

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

/** Journal migrations; each has a test that migrates a database holding rows. */
export const JOURNAL_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'calls and meta',
    up(db) {
      db.exec(`
        CREATE TABLE calls (
          workspace_id TEXT NOT NULL,
          device_id    TEXT NOT NULL,
          call_id      TEXT NOT NULL,
          function     TEXT NOT NULL,
          args_digest  TEXT NOT NULL,
          state        TEXT NOT NULL,
          outcome      TEXT,
          tombstone    INTEGER NOT NULL DEFAULT 0,
          delivered    INTEGER NOT NULL DEFAULT 0,
          accepted_at  TEXT,
          started_at   TEXT,
          finished_at  TEXT,
          created_ms   INTEGER NOT NULL,
          updated_ms   INTEGER NOT NULL,
          PRIMARY KEY (workspace_id, device_id, call_id)
        ) WITHOUT ROWID;
        CREATE INDEX calls_by_state ON calls (state);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      `);
    },
  },
  {
    version: 2,
    name: 'outbox and listing indexes',
    up(db) {
      db.exec(`
        CREATE INDEX calls_outbox ON calls (delivered, finished_at) WHERE outcome IS NOT NULL;
        CREATE INDEX calls_by_time ON calls (workspace_id, device_id, created_ms);
      `);
    },
  },
  {
    version: 3,
    name: 'fewer indexes on the hot path',
    up(db) {
      // Every accept and finish paid for these; the listing and recovery scans they served are rare
      // and bounded by retention.
      db.exec(`DROP INDEX calls_by_state; DROP INDEX calls_by_time;`);
    },
  },
];

interface Op {
  run(): void;
  /** Ops that can fail on their own (inserts) run in a savepoint so that only they fail. */
  mayFail: boolean;
  resolve(): void;
  reject(e: unknown): void;
}

const RECOVERABLE_RUNNING: CallState[] = ['running'];
const RECOVERABLE_WAITING: CallState[] = ['accepted', 'awaiting_confirmation'];

/** The journal for one device identity (workspace + device). */
export class Journal {
  readonly db: Database.Database;
  private queue: Op[] = [];
  private scheduled = false;
  private closed = false;
  /**
   * True while several calls are in flight: writes then wait for the end of the event-loop turn, so one
   * commit serves them all. Alone, a write commits at the end of the current task (lowest latency).
   */
  batchHint: () => boolean = () => false;
  private readonly st;
  /** One transaction for a group of ops; a failing insert (a duplicate key) fails only its own op, through a savepoint. */
  private readonly group: (ops: Op[], errors: Map<Op, unknown>) => void;
  private readonly savepoint: (op: Op) => void;

  constructor(path: string, private readonly scope: { workspaceId: string; deviceId: string }, sync: SyncLevel = 'NORMAL') {
    // Exclusive: one agent per journal (two agents sharing a data directory would break deduplication).
    try {
      this.db = openDatabase(path, sync, true);
      migrate(this.db, JOURNAL_MIGRATIONS);
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_BUSY') {
        throw new Error(`the journal ${path} is in use by another agent; run one agent per data directory`, { cause: e });
      }
      throw e;
    }
    // Positional parameters on the per-call statements: binding an object per call cost more.
    const k = 'workspace_id = @ws AND device_id = @dev AND call_id = @id';
    const kp = 'workspace_id = ? AND device_id = ? AND call_id = ?';
    this.st = {
      get: this.db.prepare(`SELECT * FROM calls WHERE ${kp}`),
      insert: this.db.prepare(`INSERT INTO calls (workspace_id, device_id, call_id, function, args_digest, state, outcome, tombstone, delivered, accepted_at, started_at, created_ms, updated_ms)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      setState: this.db.prepare(`UPDATE calls SET state = ?, started_at = COALESCE(?, started_at), updated_ms = ? WHERE ${kp}`),
      finish: this.db.prepare(`UPDATE calls SET state = ?, outcome = ?, finished_at = ?, delivered = ?, updated_ms = ? WHERE ${kp}`),
      delivered: this.db.prepare(`UPDATE calls SET delivered = @delivered WHERE ${k}`),
      outbox: this.db.prepare(`SELECT outcome FROM calls WHERE workspace_id = @ws AND device_id = @dev AND delivered = 0 AND outcome IS NOT NULL ORDER BY finished_at LIMIT @limit`),
      sweep: this.db.prepare(`DELETE FROM calls WHERE created_ms < @before AND (outcome IS NOT NULL OR tombstone = 1) AND delivered = 1`),
      metaGet: this.db.prepare(`SELECT value FROM meta WHERE key = ?`),
      metaSet: this.db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`),
    };
    // Made once: building a transaction wrapper per commit (and per insert) showed up in profiles.
    this.savepoint = this.db.transaction((op: Op) => op.run());
    this.group = this.db.transaction((ops: Op[], errors: Map<Op, unknown>) => {
      for (const op of ops) {
        if (!op.mayFail) {
          op.run();
          continue;
        }
        try {
          this.savepoint(op);
        } catch (e) {
          errors.set(op, e);
        }
      }
    });
  }

  private key(callId: string) {
    return { ws: this.scope.workspaceId, dev: this.scope.deviceId, id: callId };
  }

  /** Reads a row synchronously (reads never wait for the group commit; pending writes are in memory in the dispatcher). */
  get(callId: string): JournalRow | undefined {
    const r = this.st.get.get(this.scope.workspaceId, this.scope.deviceId, callId) as Record<string, unknown> | undefined;
    return r ? toRow(r) : undefined;
  }

  /**
   * Journals an accepted call, as `accepted` or directly as `running` when it starts at once; resolves
   * once committed. Rejects if the call_id already exists.
   */
  accept(callId: string, fn: string, digest: string, acceptedAt: string, state: 'accepted' | 'running' = 'accepted', startedAt: string | null = null): Promise<void> {
    return this.enqueue(() => {
      const now = Date.now();
      this.st.insert.run(this.scope.workspaceId, this.scope.deviceId, callId, fn, digest, state, null, 0, 0, acceptedAt, startedAt, now, now);
    }, true);
  }

  /** Journals a tombstone for a cancel that arrived before its invoke (§6.5). */
  tombstone(callId: string, outcome: Outcome): Promise<void> {
    return this.enqueue(() => {
      const now = Date.now();
      this.st.insert.run(this.scope.workspaceId, this.scope.deviceId, callId, '', '', 'cancelled', JSON.stringify(outcome), 1, 1, null, null, now, now);
    }, true);
  }

  /** Records a non-terminal transition. */
  setState(callId: string, state: CallState, startedAt?: string): Promise<void> {
    return this.enqueue(() => {
      this.st.setState.run(state, startedAt ?? null, Date.now(), this.scope.workspaceId, this.scope.deviceId, callId);
    });
  }

  /** Records the terminal outcome (undelivered until acknowledged). */
  finish(outcome: Outcome, delivered = false): Promise<void> {
    return this.enqueue(() => {
      this.st.finish.run(outcome.state, JSON.stringify(outcome), outcome.finished_at ?? new Date().toISOString(), delivered ? 1 : 0, Date.now(), this.scope.workspaceId, this.scope.deviceId, outcome.call_id);
    });
  }

  /** Marks outcomes as delivered (the bridge acknowledged them). */
  markDelivered(callIds: readonly string[]): Promise<void> {
    return this.enqueue(() => {
      for (const id of callIds) this.st.delivered.run({ ...this.key(id), delivered: 1 });
    });
  }

  /** Puts an outcome back into the outbox (its response could not be sent after all). */
  markUndelivered(callId: string): Promise<void> {
    return this.enqueue(() => {
      this.st.delivered.run({ ...this.key(callId), delivered: 0 });
    });
  }

  /** Outcomes not yet acknowledged, oldest first. */
  outbox(limit = 100): Outcome[] {
    const rows = this.st.outbox.all({ ws: this.scope.workspaceId, dev: this.scope.deviceId, limit }) as { outcome: string }[];
    return rows.map((r) => JSON.parse(r.outcome) as Outcome);
  }

  /** Lists calls for `aios/call.list`, newest first, keyset-paginated by (created_ms, call_id). */
  list(opts: { sinceMs?: number; states?: string[]; limit: number; cursor?: { ms: number; id: string } }): { rows: JournalRow[]; next?: { ms: number; id: string } } {
    const where = ['workspace_id = @ws', 'device_id = @dev', 'tombstone = 0'];
    const p: Record<string, unknown> = { ws: this.scope.workspaceId, dev: this.scope.deviceId, limit: opts.limit + 1 };
    if (opts.sinceMs !== undefined) {
      where.push('created_ms >= @since');
      p['since'] = opts.sinceMs;
    }
    if (opts.states?.length) {
      where.push(`state IN (${opts.states.map((_, i) => `@s${i}`).join(',')})`);
      opts.states.forEach((s, i) => (p[`s${i}`] = s));
    }
    if (opts.cursor) {
      where.push('(created_ms < @cms OR (created_ms = @cms AND call_id < @cid))');
      p['cms'] = opts.cursor.ms;
      p['cid'] = opts.cursor.id;
    }
    const raw = this.db.prepare(`SELECT * FROM calls WHERE ${where.join(' AND ')} ORDER BY created_ms DESC, call_id DESC LIMIT @limit`).all(p) as Record<string, unknown>[];
    const more = raw.length > opts.limit;
    const page = raw.slice(0, opts.limit);
    const last = page.at(-1);
    return { rows: page.map(toRow), ...(more && last ? { next: { ms: last['created_ms'] as number, id: last['call_id'] as string } } : {}) };
  }

  /**
   * Crash recovery (§5): rows found running become unknown/execution_interrupted (side effects possible);
   * rows that never reached running become failed/execution_interrupted (none). Never re-run.
   * Returns the recovered outcomes (they sit in the outbox).
   */
  recover(now = new Date()): Outcome[] {
    const rows = this.db
      .prepare(`SELECT * FROM calls WHERE workspace_id = ? AND device_id = ? AND outcome IS NULL AND tombstone = 0`)
      .all(this.scope.workspaceId, this.scope.deviceId) as Record<string, unknown>[];
    const out: Outcome[] = [];
    const at = now.toISOString();
    const tx = this.db.transaction(() => {
      for (const r of rows) {
        const state = r['state'] as CallState;
        const wasRunning = RECOVERABLE_RUNNING.includes(state);
        if (!wasRunning && !RECOVERABLE_WAITING.includes(state)) continue;
        const started = (r['started_at'] as string | null) ?? null;
        const accepted = (r['accepted_at'] as string | null) ?? null;
        const outcome: Outcome = {
          call_id: r['call_id'] as string,
          function: r['function'] as string,
          state: wasRunning ? 'unknown' : 'failed',
          error: {
            code: ERRORS.execution_interrupted.code,
            type: 'execution_interrupted',
            message: wasRunning ? 'The device client stopped while this call was running; its effect is unknown.' : 'The device client stopped before this call started; it did not run.',
            retryable: false,
            side_effects: wasRunning ? 'possible' : 'none',
          },
          replayed: false,
          accepted_at: accepted,
          started_at: started,
          finished_at: at,
          duration_ms: started ? Math.max(0, now.getTime() - Date.parse(started)) : null,
        };
        this.st.finish.run(outcome.state, JSON.stringify(outcome), at, 0, now.getTime(), this.scope.workspaceId, this.scope.deviceId, outcome.call_id);
        out.push(outcome);
      }
    });
    tx();
    return out;
  }

  /** Deletes delivered terminal rows and tombstones older than the retention window. */
  sweep(retentionS: number, now = Date.now()): number {
    return this.st.sweep.run({ before: now - retentionS * 1000 }).changes;
  }

  metaGet(key: string): string | undefined {
    return (this.st.metaGet.get(key) as { value: string } | undefined)?.value;
  }

  metaSet(key: string, value: string): void {
    this.st.metaSet.run(key, value);
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.db.close();
  }

  private enqueue(run: () => void, mayFail = false): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the journal is closed'));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ run, mayFail, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        if (this.batchHint()) setImmediate(() => this.flush());
        else queueMicrotask(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const ops = this.queue;
    if (!ops.length) return;
    this.queue = [];
    if (this.closed) {
      for (const op of ops) op.reject(new Error('the journal is closed'));
      return;
    }
    const errors = new Map<Op, unknown>();
    try {
      this.group(ops, errors);
    } catch (e) {
      for (const op of ops) op.reject(e);
      return;
    }
    for (const op of ops) {
      const e = errors.get(op);
      if (e) op.reject(e);
      else op.resolve();
    }
  }
}

function toRow(r: Record<string, unknown>): JournalRow {
  const outcome = typeof r['outcome'] === 'string' ? (JSON.parse(r['outcome']) as Outcome) : undefined;
  const state = r['state'] as CallState;
  return {
    callId: r['call_id'] as string,
    function: r['function'] as string,
    argsDigest: r['args_digest'] as string,
    state: outcome && isTerminal(outcome.state) ? outcome.state : state,
    outcome,
    tombstone: r['tombstone'] === 1,
    acceptedAt: (r['accepted_at'] as string | null) ?? null,
    startedAt: (r['started_at'] as string | null) ?? null,
  };
}
