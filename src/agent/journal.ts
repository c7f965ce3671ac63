/**
 * The persistent call journal (PROTOCOL.md §5, §6.8): accept-before-execute, replay, tombstones,
 * crash recovery, retention, and the outbox of undelivered outcomes.
 *
 * Two files: an append-only **log** (`<journal>.log`, one JSON line per write) and the SQLite
 * **table** that indexes it. A write is durable once its line is in the log: writes made in the same
 * event-loop turn (or, for a call alone, the same task) leave in one `write()` (plus `fdatasync` at
 * `synchronous: full`), and only then do their promises resolve; the dispatcher starts a handler only
 * after its accept has resolved, so accept-before-execute holds. The table catches up in batches
 * (when the journal has been quiet for 50 ms, or at the latest after 2 s or 8192 rows, and before any
 * read that scans it): one upsert per touched row in
 * one transaction, after which the log is emptied. Until then the rows live in memory (`rows`), where
 * `get` finds them. At start-up the log left by a crash is replayed into the table before recovery.
 *
 * Why not a SQLite commit per group: one commit of one small row costs 25–55 µs here, a `write()` of
 * the same bytes about 2 µs; a call needs two durable writes (accept, outcome). See docs/performance.md.
 */
import type Database from 'better-sqlite3';
import { closeSync, fdatasyncSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { openDatabase, migrate, type Migration, type SyncLevel } from '../storage/sqlite.js';
import type { CallState, Outcome } from '../protocol/messages.js';
import { isTerminal } from '../protocol/messages.js';
import { ERRORS } from '../protocol/errors.js';
import { IdFilter } from './id-filter.js';

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

/** A row held in memory until the table catches up with the log. */
interface Row {
  callId: string;
  fn: string;
  digest: string;
  state: CallState;
  /** The outcome as it was journalled (parsed only when a replay needs it). */
  outcomeJson: string | null;
  tombstone: boolean;
  delivered: boolean;
  acceptedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  createdMs: number;
  updatedMs: number;
}

/**
 * A log record, one JSON array per line. Each log starts with `["h", workspace_id, device_id]`, the
 * identity its rows belong to. Then: `["a", id, fn, digest, state, accepted_at, started_at, ms]` accept ·
 * `["t", id, outcome, ms]` tombstone · `["s", id, state, started_at, ms]` state ·
 * `["f", id, outcome, finished_at, delivered, ms]` outcome · `["d", [id…], delivered, ms]` delivery.
 */
type Rec =
  | ['a', string, string, string, CallState, string | null, string | null, number]
  | ['t', string, Outcome, number]
  | ['s', string, CallState, string | null, number]
  | ['f', string, Outcome, string, 0 | 1, number]
  | ['d', string[], 0 | 1, number];

interface Op {
  line: string;
  /** Applies the write to the in-memory rows once its line is in the log. */
  apply(): void;
  resolve(): void;
  reject(e: unknown): void;
}

const RECOVERABLE_RUNNING: CallState[] = ['running'];
const RECOVERABLE_WAITING: CallState[] = ['accepted', 'awaiting_confirmation'];
/**
 * When the table catches up. It is work no call waits for, so it is done when the journal has been
 * quiet for INDEX_IDLE_MS (after a burst of calls, not during it); under continuous load, once the
 * oldest row held has waited INDEX_MAX_AGE_MS; and at once when INDEX_MAX_ROWS rows are held (a bound
 * on memory, on the log's size and on the time a replay or a scanning read takes).
 */
const INDEX_IDLE_MS = 50;
const INDEX_MAX_AGE_MS = 2000;
const INDEX_MAX_ROWS = 8192;
/** After a failed checkpoint, the next try. */
const INDEX_RETRY_MS = 1000;

/** The call_id is already journalled (a duplicate accept or tombstone). */
export class DuplicateCallError extends Error {
  constructor(callId: string) {
    super(`call ${callId} is already journalled`);
    this.name = 'DuplicateCallError';
  }
}

/** The journal for one device identity (workspace + device). */
export class Journal {
  readonly db: Database.Database;
  /** The log's path: `<journal path>.log`. */
  readonly logPath: string;
  private readonly fd: number;
  private readonly fsync: boolean;
  private queue: Op[] = [];
  /** Ids with an accept or tombstone queued but not yet logged (a second one is a duplicate). */
  private queuedIds = new Set<string>();
  private scheduled = false;
  private closed = false;
  /** Rows written to the log and not yet to the table, by call_id. */
  private readonly rows = new Map<string, Row>();
  /**
   * The ids this identity's table holds (a Bloom filter): a fresh id, which it certainly lacks, needs
   * no table lookup. Made after the replay; rebuilt from the table when it outgrows its size.
   */
  private ids = new IdFilter(65_536);
  private indexTimer: NodeJS.Timeout | undefined;
  /** When the oldest row the table lacks was logged (ms), if any. */
  private oldestUnindexed: number | undefined;
  /** After a failed checkpoint: no new attempt before this time (ms), other than the retry timer's. */
  private retryAfter = 0;
  /**
   * The identity the rows in memory belong to: this journal's, except while replaying a log another
   * identity wrote (the device signed in as another device with the same data directory).
   */
  private rowsScope: { workspaceId: string; deviceId: string };
  /** The log is empty: its next write starts with the header line naming the identity. */
  private needHeader = true;
  /**
   * True while several calls are in flight: writes then wait for the end of the event-loop turn, so one
   * `write()` serves them all. Alone, a write is logged at the end of the current task (lowest latency).
   */
  batchHint: () => boolean = () => false;
  private readonly st;
  private readonly upsertAll: (rows: Iterable<Row>) => void;

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
    const kp = 'workspace_id = ? AND device_id = ? AND call_id = ?';
    this.st = {
      get: this.db.prepare(`SELECT * FROM calls WHERE ${kp}`),
      upsert: this.db.prepare(`INSERT INTO calls (workspace_id, device_id, call_id, function, args_digest, state, outcome, tombstone, delivered, accepted_at, started_at, finished_at, created_ms, updated_ms)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (workspace_id, device_id, call_id) DO UPDATE SET state = excluded.state, outcome = excluded.outcome, tombstone = excluded.tombstone,
          delivered = excluded.delivered, started_at = excluded.started_at, finished_at = excluded.finished_at, updated_ms = excluded.updated_ms`),
      finish: this.db.prepare(`UPDATE calls SET state = ?, outcome = ?, finished_at = ?, delivered = ?, updated_ms = ? WHERE ${kp}`),
      outbox: this.db.prepare(`SELECT outcome FROM calls WHERE workspace_id = @ws AND device_id = @dev AND delivered = 0 AND outcome IS NOT NULL ORDER BY finished_at LIMIT @limit`),
      sweep: this.db.prepare(`DELETE FROM calls WHERE created_ms < @before AND (outcome IS NOT NULL OR tombstone = 1) AND delivered = 1`),
      ids: this.db.prepare(`SELECT call_id FROM calls WHERE workspace_id = ? AND device_id = ?`).pluck(),
      count: this.db.prepare(`SELECT count(*) FROM calls WHERE workspace_id = ? AND device_id = ?`).pluck(),
      metaGet: this.db.prepare(`SELECT value FROM meta WHERE key = ?`),
      metaSet: this.db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`),
    };
    this.rowsScope = scope;
    this.upsertAll = this.db.transaction((rows: Iterable<Row>) => {
      const { workspaceId: ws, deviceId: dev } = this.rowsScope;
      for (const r of rows) {
        this.st.upsert.run(ws, dev, r.callId, r.fn, r.digest, r.state, r.outcomeJson, r.tombstone ? 1 : 0, r.delivered ? 1 : 0, r.acceptedAt, r.startedAt, r.finishedAt, r.createdMs, r.updatedMs);
      }
    });
    this.fsync = sync === 'FULL';
    this.logPath = `${path}.log`;
    this.fd = openSync(this.logPath, 'a+', 0o600);
    try {
      this.replay();
      this.rebuildIds();
    } catch (e) {
      closeSync(this.fd);
      this.db.close();
      throw e;
    }
  }

  /** Sizes the id filter for twice the ids the table holds now (at least 65 536) and fills it. */
  private rebuildIds(): void {
    const { workspaceId: ws, deviceId: dev } = this.scope;
    const n = this.st.count.get(ws, dev) as number;
    const f = new IdFilter(Math.max(65_536, n * 2));
    for (const id of this.st.ids.iterate(ws, dev) as IterableIterator<string>) f.add(id);
    this.ids = f;
  }

  /** Reads a row synchronously: from memory if the table has not caught up with it, else from the table. */
  get(callId: string): JournalRow | undefined {
    const m = this.rows.get(callId);
    if (m) return toJournalRow(m);
    if (!this.ids.mayHave(callId)) return undefined;
    const r = this.st.get.get(this.scope.workspaceId, this.scope.deviceId, callId) as Record<string, unknown> | undefined;
    return r ? toJournalRow(fromTable(r)) : undefined;
  }

  /**
   * Journals an accepted call, as `accepted` or directly as `running` when it starts at once; resolves
   * once logged. Rejects if the call_id already exists.
   */
  accept(callId: string, fn: string, digest: string, acceptedAt: string, state: 'accepted' | 'running' = 'accepted', startedAt: string | null = null): Promise<void> {
    if (this.known(callId)) return Promise.reject(new DuplicateCallError(callId));
    const ms = Date.now();
    const rec: Rec = ['a', callId, fn, digest, state, acceptedAt, startedAt, ms];
    return this.enqueue(JSON.stringify(rec), () => this.applyRec(rec), callId);
  }

  /** Journals a tombstone for a cancel that arrived before its invoke (§6.5). */
  tombstone(callId: string, outcome: Outcome): Promise<void> {
    if (this.known(callId)) return Promise.reject(new DuplicateCallError(callId));
    const rec: Rec = ['t', callId, outcome, Date.now()];
    return this.enqueue(JSON.stringify(rec), () => this.applyRec(rec), callId);
  }

  /** Records a non-terminal transition. */
  setState(callId: string, state: CallState, startedAt?: string): Promise<void> {
    const rec: Rec = ['s', callId, state, startedAt ?? null, Date.now()];
    return this.enqueue(JSON.stringify(rec), () => this.applyRec(rec));
  }

  /** Records the terminal outcome (undelivered until acknowledged); `json` is the outcome's JSON if already made. */
  finish(outcome: Outcome, delivered = false, json = JSON.stringify(outcome)): Promise<void> {
    const fin = outcome.finished_at ?? new Date().toISOString();
    const ms = Date.now();
    // The outcome's JSON is made once: it goes into the line and, later, into the table.
    const line = `["f",${JSON.stringify(outcome.call_id)},${json},${JSON.stringify(fin)},${delivered ? 1 : 0},${ms}]`;
    return this.enqueue(line, () => this.applyFinish(outcome.call_id, outcome.state, json, fin, delivered, ms));
  }

  /** Marks outcomes as delivered (the bridge acknowledged them). */
  markDelivered(callIds: readonly string[]): Promise<void> {
    if (!callIds.length) return Promise.resolve();
    const rec: Rec = ['d', [...callIds], 1, Date.now()];
    return this.enqueue(JSON.stringify(rec), () => this.applyRec(rec));
  }

  /** Puts an outcome back into the outbox (its response could not be sent after all). */
  markUndelivered(callId: string): Promise<void> {
    const rec: Rec = ['d', [callId], 0, Date.now()];
    return this.enqueue(JSON.stringify(rec), () => this.applyRec(rec));
  }

  /** Outcomes not yet acknowledged, oldest first. */
  outbox(limit = 100): Outcome[] {
    this.checkpoint();
    const rows = this.st.outbox.all({ ws: this.scope.workspaceId, dev: this.scope.deviceId, limit }) as { outcome: string }[];
    return rows.map((r) => JSON.parse(r.outcome) as Outcome);
  }

  /** Lists calls for `aios/call.list`, newest first, keyset-paginated by (created_ms, call_id). */
  list(opts: { sinceMs?: number; states?: string[]; limit: number; cursor?: { ms: number; id: string } }): { rows: JournalRow[]; next?: { ms: number; id: string } } {
    this.checkpoint();
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
    return { rows: page.map((r) => toJournalRow(fromTable(r))), ...(more && last ? { next: { ms: last['created_ms'] as number, id: last['call_id'] as string } } : {}) };
  }

  /**
   * Crash recovery (§5): rows found running become unknown/execution_interrupted (side effects possible);
   * rows that never reached running become failed/execution_interrupted (none). Never re-run.
   * Returns the recovered outcomes (they sit in the outbox).
   */
  recover(now = new Date()): Outcome[] {
    this.checkpoint();
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
    this.checkpoint();
    return this.st.sweep.run({ before: now - retentionS * 1000 }).changes;
  }

  metaGet(key: string): string | undefined {
    return (this.st.metaGet.get(key) as { value: string } | undefined)?.value;
  }

  metaSet(key: string, value: string): void {
    this.st.metaSet.run(key, value);
  }

  /**
   * Brings the table up to date with the log: every row held in memory is upserted in one
   * transaction, then the log is emptied. Runs on its own when the journal is quiet (see INDEX_*).
   */
  checkpoint(): void {
    clearTimeout(this.indexTimer);
    this.indexTimer = undefined;
    this.oldestUnindexed = undefined;
    if (!this.rows.size) return;
    this.indexRows();
    // Only now: until the table has the rows, the log is their only durable copy.
    ftruncateSync(this.fd, 0);
    this.needHeader = true;
  }

  /** Upserts the rows held in memory into the table (in `rowsScope`) and forgets them. */
  private indexRows(): void {
    this.upsertAll(this.rows.values());
    const own = this.rowsScope === this.scope;
    // An id already "maybe" (an update of a row checkpointed before) is not counted twice.
    if (own) for (const id of this.rows.keys()) if (!this.ids.mayHave(id)) this.ids.add(id);
    this.rows.clear();
    if (own && this.ids.full) this.rebuildIds();
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    try {
      this.checkpoint();
    } catch (e) {
      // The log still holds every row the table lacks; the next start replays it.
      this.onCheckpointError(e);
    } finally {
      this.closed = true;
      clearTimeout(this.indexTimer);
      closeSync(this.fd);
      this.db.close();
    }
  }

  /** A row by id, from memory or the table (then held in memory for the coming update). */
  private row(callId: string): Row | undefined {
    let r = this.rows.get(callId);
    if (r) return r;
    const t = this.st.get.get(this.rowsScope.workspaceId, this.rowsScope.deviceId, callId) as Record<string, unknown> | undefined;
    if (!t) return undefined;
    r = fromTable(t);
    this.rows.set(callId, r);
    return r;
  }

  private known(callId: string): boolean {
    if (this.queuedIds.has(callId) || this.rows.has(callId)) return true;
    if (!this.ids.mayHave(callId)) return false;
    return this.st.get.get(this.scope.workspaceId, this.scope.deviceId, callId) !== undefined;
  }

  /** Applies one log record to the rows in memory (live writes and the replay after a crash). */
  private applyRec(rec: Rec): void {
    switch (rec[0]) {
      case 'a': {
        const [, id, fn, digest, state, acceptedAt, startedAt, ms] = rec;
        this.rows.set(id, { callId: id, fn, digest, state, outcomeJson: null, tombstone: false, delivered: false, acceptedAt, startedAt, finishedAt: null, createdMs: ms, updatedMs: ms });
        return;
      }
      case 't': {
        const [, id, outcome, ms] = rec;
        this.rows.set(id, { callId: id, fn: '', digest: '', state: 'cancelled', outcomeJson: JSON.stringify(outcome), tombstone: true, delivered: true, acceptedAt: null, startedAt: null, finishedAt: outcome.finished_at ?? null, createdMs: ms, updatedMs: ms });
        return;
      }
      case 's': {
        const [, id, state, startedAt, ms] = rec;
        const r = this.row(id);
        // A state after the outcome (a replayed log) never reopens a row.
        if (!r || r.outcomeJson) return;
        r.state = state;
        if (startedAt) r.startedAt = startedAt;
        r.updatedMs = ms;
        return;
      }
      case 'f': {
        const [, id, outcome, fin, delivered, ms] = rec;
        this.applyFinish(id, outcome.state, JSON.stringify(outcome), fin, delivered === 1, ms);
        return;
      }
      case 'd': {
        const [, ids, delivered, ms] = rec;
        for (const id of ids) {
          const r = this.row(id);
          if (!r) continue;
          r.delivered = delivered === 1;
          r.updatedMs = ms;
        }
        return;
      }
    }
  }

  private applyFinish(id: string, state: CallState, json: string, fin: string, delivered: boolean, ms: number): void {
    const r = this.row(id);
    if (!r) return;
    r.state = state;
    r.outcomeJson = json;
    r.finishedAt = fin;
    r.delivered = delivered;
    r.updatedMs = ms;
  }

  /** Start-up: applies what a previous run logged but did not index (it stopped without closing). */
  private replay(): void {
    const text = readFileSync(this.logPath, 'utf8');
    if (!text) return;
    let start = 0;
    for (;;) {
      const end = text.indexOf('\n', start);
      // A last line without its newline was cut short by a crash during its write: it was never
      // acknowledged, so it is dropped.
      if (end < 0) break;
      const line = text.slice(start, end);
      start = end + 1;
      let rec: Rec;
      try {
        rec = JSON.parse(line) as Rec;
      } catch {
        break;
      }
      if (!Array.isArray(rec)) continue;
      if ((rec as unknown[])[0] === 'h') {
        // The identity that wrote what follows; rows of another identity go to its own scope.
        const [, ws, dev] = rec as unknown as [string, string, string];
        if (ws !== this.rowsScope.workspaceId || dev !== this.rowsScope.deviceId) {
          if (this.rows.size) this.indexRows();
          this.rowsScope = { workspaceId: ws, deviceId: dev };
        }
        continue;
      }
      this.applyRec(rec);
    }
    try {
      if (this.rows.size) this.indexRows();
    } finally {
      this.rowsScope = this.scope;
    }
    // The table has every row: start with an empty log.
    ftruncateSync(this.fd, 0);
    this.needHeader = true;
  }

  private enqueue(line: string, apply: () => void, newId?: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the journal is closed'));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ line, apply, resolve, reject });
      if (newId !== undefined) this.queuedIds.add(newId);
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
    this.queuedIds.clear();
    if (this.closed) {
      for (const op of ops) op.reject(new Error('the journal is closed'));
      return;
    }
    let text = this.needHeader ? JSON.stringify(['h', this.scope.workspaceId, this.scope.deviceId]) + '\n' : '';
    for (const op of ops) text += op.line + '\n';
    try {
      writeAll(this.fd, text);
      if (this.fsync) fdatasyncSync(this.fd);
    } catch (e) {
      for (const op of ops) op.reject(e);
      return;
    }
    this.needHeader = false;
    for (const op of ops) {
      try {
        op.apply();
        op.resolve();
      } catch (e) {
        op.reject(e);
      }
    }
    if (!this.rows.size) return;
    const now = Date.now();
    // A checkpoint just failed: its retry timer is set; attempts on every write would only fail again.
    if (now < this.retryAfter) return;
    this.oldestUnindexed ??= now;
    if (this.rows.size >= INDEX_MAX_ROWS || now - this.oldestUnindexed >= INDEX_MAX_AGE_MS) {
      this.backgroundCheckpoint();
      return;
    }
    // Quiet for INDEX_IDLE_MS from now on: each write pushes the catch-up back.
    if (this.indexTimer) this.indexTimer.refresh();
    else {
      this.indexTimer = setTimeout(() => this.backgroundCheckpoint(), INDEX_IDLE_MS);
      this.indexTimer.unref();
    }
  }

  /**
   * A checkpoint nobody waits for. If the table cannot be written (disk full, I/O error), nothing is
   * lost: the rows stay in memory, the log keeps them, and the next checkpoint tries again; reads that
   * need the table (`outbox`, `list`, `recover`, `sweep`) raise the error to their caller.
   */
  private backgroundCheckpoint(): void {
    try {
      this.checkpoint();
      this.retryAfter = 0;
      this.onBackgroundCheckpoint();
    } catch (e) {
      this.onCheckpointError(e);
      this.retryAfter = Date.now() + INDEX_RETRY_MS;
      clearTimeout(this.indexTimer);
      this.indexTimer = setTimeout(() => this.backgroundCheckpoint(), INDEX_RETRY_MS);
      this.indexTimer.unref();
    }
  }

  /** Told about a checkpoint that failed in the background (the agent logs it). */
  onCheckpointError: (e: unknown) => void = () => undefined;

  /** Told when a background catch-up has written the table (tests wait on it instead of sleeping). */
  onBackgroundCheckpoint: () => void = () => undefined;
}

/** Writes the whole string (a short write is continued, never left half-done). */
function writeAll(fd: number, text: string): void {
  const buf = Buffer.from(text);
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off);
}

function fromTable(r: Record<string, unknown>): Row {
  const json = (r['outcome'] as string | null) ?? null;
  return {
    callId: r['call_id'] as string,
    fn: r['function'] as string,
    digest: r['args_digest'] as string,
    state: r['state'] as CallState,
    outcomeJson: json,
    tombstone: r['tombstone'] === 1,
    delivered: r['delivered'] === 1,
    acceptedAt: (r['accepted_at'] as string | null) ?? null,
    startedAt: (r['started_at'] as string | null) ?? null,
    finishedAt: (r['finished_at'] as string | null) ?? null,
    createdMs: r['created_ms'] as number,
    updatedMs: r['updated_ms'] as number,
  };
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
