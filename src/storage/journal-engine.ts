/**
 * The call journal's storage engine (PROTOCOL.md §5, §6.8): the group-committed **log**
 * (`journal-log.ts`), where a write is durable, and the SQLite **table** (`journal-table.ts`) that indexes
 * it. What a call's rows mean (duplicates, recovery's outcomes, replay) is the agent's (`src/agent/journal.ts`).
 *
 * Rows written to the log live in memory (`rows`, where `get` finds them) until the table **catches up**:
 * when the journal has been quiet for 50 ms, or at the latest after 2 s or 8192 rows, and before any read
 * that scans the table. A background catch-up writes the rows in transactions of 512, yielding to the
 * event loop between them (one transaction of 8192 rows held the loop ≈ 50 ms), and empties the log only
 * once the table has every row the log carries. At start-up the log left by a crash is replayed into the
 * table.
 *
 * Deduplication needs no table lookup for a fresh `call_id`: a Bloom filter (`id-filter.ts`) of the ids
 * the table holds says "certainly new"; when it outgrows its size it is rebuilt from the table in
 * steps too, the old filter answering (with every new id added to both) until the new one is complete.
 */
import type { CallState, Outcome } from '../protocol/messages.js';
import type { SyncLevel } from './sqlite.js';
import { IdFilter } from './id-filter.js';
import { JournalLog, type LogLine, type LogRecord } from './journal-log.js';
import { JournalTable, type ListOptions, type Row, type Scope } from './journal-table.js';

export { JOURNAL_MIGRATIONS, JOURNAL_SCHEMA, type ListOptions, type Row, type Scope } from './journal-table.js';

/**
 * When the table catches up. It is work no call waits for, so it is done when the journal has been
 * quiet for INDEX_IDLE_MS (after a burst of calls, not during it); under continuous load, once the
 * oldest row held has waited INDEX_MAX_AGE_MS; and at once when INDEX_MAX_ROWS rows are held (a bound
 * on memory, on the log's size and on the time a replay or a scanning read takes).
 */
const INDEX_IDLE_MS = 50;
const INDEX_MAX_AGE_MS = 2000;
const INDEX_MAX_ROWS = 8192;
/** Rows per transaction of a background catch-up (≈ 2 ms of the event loop each here). */
const CATCH_UP_CHUNK = 512;
/**
 * A catch-up ends by writing the rows that arrived while it ran in one last transaction and emptying
 * the log; more than this many, and it takes another pass in chunks first.
 */
const CATCH_UP_FINAL_MAX = 1024;
/** Ids read per step of an id filter rebuild. */
const REBUILD_CHUNK = 4096;
/** After a failed checkpoint, the next try. */
const INDEX_RETRY_MS = 1000;

/** The journal's storage for one device identity (workspace + device). */
export class JournalEngine {
  private readonly table: JournalTable;
  private readonly log: JournalLog;
  /** Ids with an accept or tombstone queued but not yet logged (a second one is a duplicate). */
  private queuedIds = new Set<string>();
  private closed = false;
  /** Set once the replay and the first id filter are done (the replay leaves the filter to that). */
  private started = false;
  /** Rows written to the log and not yet to the table, by call_id. */
  private rows = new Map<string, Row>();
  /**
   * The rows a background catch-up is writing to the table, never changed while it runs: a write to one
   * of them goes to a copy in `rows`, which the catch-up's end or the next one writes.
   */
  private indexing: Map<string, Row> | undefined;
  /** Bumped to stop a background catch-up in its next step (a synchronous checkpoint, close). */
  private catchUpRun = 0;
  /**
   * The ids this identity's table holds (a Bloom filter): a fresh id, which it certainly lacks, needs
   * no table lookup. Made after the replay; rebuilt from the table when it outgrows its size.
   */
  private ids = new IdFilter(65_536);
  /** The filter a rebuild is filling; ids added meanwhile go to both. */
  private nextIds: IdFilter | undefined;
  private indexTimer: NodeJS.Timeout | undefined;
  /** When the oldest row the table lacks was logged (ms), if any. */
  private oldestUnindexed: number | undefined;
  /** After a failed checkpoint: no new attempt before this time (ms), other than the retry timer's. */
  private retryAfter = 0;
  /**
   * The identity the rows in memory belong to: this journal's, except while replaying a log another
   * identity wrote (the device signed in as another device with the same data directory).
   */
  private rowsScope: Scope;

  constructor(path: string, private readonly scope: Scope, sync: SyncLevel = 'NORMAL') {
    this.table = new JournalTable(path, sync);
    this.rowsScope = scope;
    try {
      this.log = new JournalLog(`${path}.log`, scope, sync === 'FULL');
    } catch (e) {
      this.table.close();
      throw e;
    }
    this.log.onGroupTaken = () => this.queuedIds.clear();
    this.log.onGroupWritten = () => this.afterWrite();
    try {
      this.replay();
      this.rebuildIdsNow();
      this.started = true;
    } catch (e) {
      this.log.close();
      this.table.close();
      throw e;
    }
  }

  /** The table's connection (tests and tools read it). */
  get db() {
    return this.table.db;
  }

  /** The log's path: `<journal path>.log`. */
  get logPath(): string {
    return this.log.path;
  }

  /**
   * True while several calls are in flight: writes then wait for the end of the event-loop turn, so one
   * `write()` serves them all. Alone, a write is logged at the end of the current task (lowest latency).
   */
  get batchHint(): () => boolean {
    return this.log.batchHint;
  }

  set batchHint(f: () => boolean) {
    this.log.batchHint = f;
  }

  /** Reads a row synchronously: from memory if the table has not caught up with it, else from the table. */
  get(callId: string): Row | undefined {
    const m = this.rows.get(callId) ?? this.indexing?.get(callId);
    if (m) return m;
    if (!this.ids.mayHave(callId)) return undefined;
    return this.table.get(this.scope, callId);
  }

  /**
   * Journals an accepted call, as `accepted` or directly as `running` when it starts at once; resolves
   * once logged. The caller has checked that the id is not `known`.
   */
  accept(callId: string, fn: string, digest: string, acceptedAt: string, state: 'accepted' | 'running', startedAt: string | null): Promise<void> {
    const rec: LogRecord = ['a', callId, fn, digest, state, acceptedAt, startedAt, Date.now()];
    return this.write(JSON.stringify(rec), () => this.applyRec(rec), callId);
  }

  /** Journals a tombstone for a cancel that arrived before its invoke (§6.5). */
  tombstone(callId: string, outcome: Outcome): Promise<void> {
    const rec: LogRecord = ['t', callId, outcome, Date.now()];
    return this.write(JSON.stringify(rec), () => this.applyRec(rec), callId);
  }

  /** Records a non-terminal transition. */
  setState(callId: string, state: CallState, startedAt?: string): Promise<void> {
    const rec: LogRecord = ['s', callId, state, startedAt ?? null, Date.now()];
    return this.write(JSON.stringify(rec), () => this.applyRec(rec));
  }

  /** Records the terminal outcome (undelivered until acknowledged); `json` is the outcome's JSON if already made. */
  finish(outcome: Outcome, delivered: boolean, json: string): Promise<void> {
    const fin = outcome.finished_at ?? new Date().toISOString();
    const ms = Date.now();
    // The outcome's JSON is made once: it goes into the line (as one of its parts) and, later, into the table.
    const line = [`["f",${JSON.stringify(outcome.call_id)},`, json, `,${JSON.stringify(fin)},${delivered ? 1 : 0},${ms}]`];
    return this.write(line, () => this.applyFinish(outcome.call_id, outcome.state, json, fin, delivered, ms));
  }

  /** Marks outcomes as delivered (the bridge acknowledged them). */
  markDelivered(callIds: readonly string[]): Promise<void> {
    if (!callIds.length) return Promise.resolve();
    const rec: LogRecord = ['d', [...callIds], 1, Date.now()];
    return this.write(JSON.stringify(rec), () => this.applyRec(rec));
  }

  /** Puts an outcome back into the outbox (its response could not be sent after all). */
  markUndelivered(callId: string): Promise<void> {
    const rec: LogRecord = ['d', [callId], 0, Date.now()];
    return this.write(JSON.stringify(rec), () => this.applyRec(rec));
  }

  /** Outcomes (their JSON) not yet acknowledged, oldest first. */
  outbox(limit: number): string[] {
    this.checkpoint();
    return this.table.outbox(this.scope, limit);
  }

  /** A page of calls, newest first, keyset-paginated by (created_ms, call_id). */
  list(opts: ListOptions): { rows: Row[]; next?: { ms: number; id: string } } {
    this.checkpoint();
    return this.table.list(this.scope, opts);
  }

  /** Rows with neither an outcome nor a tombstone (what crash recovery looks at). */
  unfinished(): Row[] {
    this.checkpoint();
    return this.table.unfinished(this.scope);
  }

  /** Writes outcomes onto existing rows, undelivered, in one transaction. */
  finishAll(outcomes: readonly { callId: string; state: CallState; json: string; finishedAt: string; ms: number }[]): void {
    this.table.finishAll(this.scope, outcomes);
  }

  /** Deletes delivered terminal rows and tombstones older than the retention window. */
  sweep(retentionS: number, now = Date.now()): number {
    this.checkpoint();
    return this.table.sweep(now - retentionS * 1000);
  }

  metaGet(key: string): string | undefined {
    return this.table.metaGet(key);
  }

  metaSet(key: string, value: string): void {
    this.table.metaSet(key, value);
  }

  /**
   * Brings the table up to date with the log now, in one transaction (a background catch-up under way
   * is taken over), then empties the log. Reads that scan the table call it first.
   */
  checkpoint(): void {
    clearTimeout(this.indexTimer);
    this.indexTimer = undefined;
    this.stopCatchUp();
    this.oldestUnindexed = undefined;
    if (!this.rows.size) return;
    this.indexRows();
    // Only now: until the table has the rows, the log is their only durable copy.
    this.log.truncate();
  }

  close(): void {
    if (this.closed) return;
    this.log.flush();
    try {
      this.checkpoint();
    } catch (e) {
      // The log still holds every row the table lacks; the next start replays it.
      this.onCheckpointError(e);
    } finally {
      this.closed = true;
      this.catchUpRun++;
      this.nextIds = undefined;
      clearTimeout(this.indexTimer);
      this.log.close();
      this.table.close();
    }
  }

  /** Told about a checkpoint that failed in the background (the agent logs it). */
  onCheckpointError: (e: unknown) => void = () => undefined;

  /** Told when a background catch-up has written the table and emptied the log (tests wait on it instead of sleeping). */
  onBackgroundCheckpoint: () => void = () => undefined;

  /** Told when a rebuilt id filter has replaced the full one (tests wait on it). */
  onIdFilterRebuilt: () => void = () => undefined;

  private write(line: LogLine, apply: () => void, newId?: string): Promise<void> {
    const p = this.log.append(line, apply);
    if (newId !== undefined && !this.closed) this.queuedIds.add(newId);
    return p;
  }

  /** True when the id is journalled or queued to be (a second accept or tombstone would be a duplicate). */
  known(callId: string): boolean {
    if (this.queuedIds.has(callId) || this.rows.has(callId) || this.indexing?.has(callId)) return true;
    if (!this.ids.mayHave(callId)) return false;
    return this.table.has(this.scope, callId);
  }

  /** A row by id, to be changed: from `rows`, else a copy of the catch-up's or the table's, kept in `rows`. */
  private row(callId: string): Row | undefined {
    const r = this.rows.get(callId);
    if (r) return r;
    const held = this.indexing?.get(callId);
    const copy = held ? { ...held } : this.table.get(this.rowsScope, callId);
    if (copy) this.rows.set(callId, copy);
    return copy;
  }

  /** Applies one log record to the rows in memory (live writes and the replay after a crash). */
  private applyRec(rec: LogRecord): void {
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
    const recs = this.log.readAll();
    if (!recs.length) return;
    try {
      for (const rec of recs) {
        if (rec[0] === 'h') {
          // The identity that wrote what follows; rows of another identity go to its own scope.
          const [, ws, dev] = rec;
          if (ws !== this.rowsScope.workspaceId || dev !== this.rowsScope.deviceId) {
            if (this.rows.size) this.indexRows();
            this.rowsScope = { workspaceId: ws, deviceId: dev };
          }
          continue;
        }
        this.applyRec(rec);
      }
      if (this.rows.size) this.indexRows();
    } finally {
      this.rowsScope = this.scope;
    }
    // The table has every row: start with an empty log.
    this.log.truncate();
  }

  /** Upserts every row held in memory into the table (in `rowsScope`) in one transaction, and forgets them. */
  private indexRows(): void {
    this.table.upsert(this.rowsScope, this.rows.values());
    if (this.rowsScope === this.scope) this.addIds(this.rows.keys());
    this.rows.clear();
  }

  /** Puts ids now in the table into the filter(s); starts a rebuild when the filter is full. */
  private addIds(ids: Iterable<string>): void {
    const next = this.nextIds;
    // An id already "maybe" (an update of a row checkpointed before) is not counted twice.
    for (const id of ids) {
      if (!this.ids.mayHave(id)) this.ids.add(id);
      if (next && !next.mayHave(id)) next.add(id);
    }
    if (this.ids.full && !this.nextIds && this.started && !this.closed) this.startIdRebuild();
  }

  /** Sizes the id filter for twice the ids the table holds now (at least 65 536) and fills it (start-up). */
  private rebuildIdsNow(): void {
    const f = new IdFilter(Math.max(65_536, this.table.count(this.scope) * 2));
    for (const id of this.table.ids(this.scope)) f.add(id);
    this.ids = f;
  }

  /**
   * Rebuilds the full id filter from the table in steps of REBUILD_CHUNK ids, one per event-loop turn
   * (the whole scan at once held the loop ≈ 100 ms). It is sized for twice the ids added so far, which
   * counts every id the table holds (and some it swept); the old filter answers until the new one is
   * complete, and ids that reach the table meanwhile go into both, so no id is ever missed.
   */
  private startIdRebuild(): void {
    const next = new IdFilter(Math.max(65_536, this.ids.size * 2));
    this.nextIds = next;
    let after = '';
    const step = () => {
      if (this.closed || this.nextIds !== next) return;
      let ids: string[];
      try {
        ids = this.table.idsAfter(this.scope, after, REBUILD_CHUNK);
      } catch (e) {
        // The old filter stays (it is correct, only less selective); the next full check tries again.
        this.nextIds = undefined;
        this.onCheckpointError(e);
        return;
      }
      for (const id of ids) if (!next.mayHave(id)) next.add(id);
      if (ids.length === REBUILD_CHUNK) {
        after = ids[ids.length - 1]!;
        setImmediate(step);
        return;
      }
      this.ids = next;
      this.nextIds = undefined;
      this.onIdFilterRebuilt();
    };
    setImmediate(step);
  }

  /** After each logged group: decides when the table catches up. */
  private afterWrite(): void {
    if (!this.rows.size) return;
    const now = Date.now();
    // A checkpoint just failed: its retry timer is set; attempts on every write would only fail again.
    if (now < this.retryAfter) return;
    // A catch-up under way takes the new rows too.
    if (this.indexing) return;
    this.oldestUnindexed ??= now;
    if (this.rows.size >= INDEX_MAX_ROWS || now - this.oldestUnindexed >= INDEX_MAX_AGE_MS) {
      this.startCatchUp();
      return;
    }
    // Quiet for INDEX_IDLE_MS from now on: each write pushes the catch-up back.
    if (this.indexTimer) this.indexTimer.refresh();
    else {
      this.indexTimer = setTimeout(() => this.startCatchUp(), INDEX_IDLE_MS);
      this.indexTimer.unref();
    }
  }

  /**
   * A catch-up nobody waits for: the rows held now are frozen and written CATCH_UP_CHUNK per transaction,
   * one transaction per event-loop turn; then the rows that arrived meanwhile are written in one last
   * transaction (or, if many, frozen for another pass) and the log is emptied. If the table cannot be
   * written (disk full, I/O error), nothing is lost: the rows go back to memory, the log keeps them, and
   * the retry timer tries again; reads that need the table (`outbox`, `list`, `recover`, `sweep`) raise
   * the error to their caller.
   */
  private startCatchUp(): void {
    clearTimeout(this.indexTimer);
    this.indexTimer = undefined;
    if (this.indexing || this.closed || !this.rows.size) return;
    const run = ++this.catchUpRun;
    const freeze = () => {
      this.indexing = this.rows;
      this.rows = new Map();
      this.oldestUnindexed = undefined;
      return this.indexing.values();
    };
    let pending = freeze();
    const step = () => {
      if (run !== this.catchUpRun) return;
      try {
        const chunk: Row[] = [];
        for (let r = pending.next(); !r.done; r = pending.next()) {
          chunk.push(r.value);
          if (chunk.length === CATCH_UP_CHUNK) break;
        }
        if (chunk.length) {
          this.table.upsert(this.scope, chunk);
          this.addIds(chunk.map((r) => r.callId));
        }
        if (chunk.length === CATCH_UP_CHUNK) {
          setImmediate(step);
          return;
        }
        this.indexing = undefined;
        if (this.rows.size > CATCH_UP_FINAL_MAX) {
          pending = freeze();
          setImmediate(step);
          return;
        }
        if (this.rows.size) this.indexRows();
        this.log.truncate();
        this.oldestUnindexed = undefined;
        this.retryAfter = 0;
        this.onBackgroundCheckpoint();
      } catch (e) {
        this.mergeBack();
        this.onCheckpointError(e);
        this.retryAfter = Date.now() + INDEX_RETRY_MS;
        clearTimeout(this.indexTimer);
        this.indexTimer = setTimeout(() => this.startCatchUp(), INDEX_RETRY_MS);
        this.indexTimer.unref();
      }
    };
    setImmediate(step);
  }

  /** Stops a background catch-up under way; its rows not yet superseded go back to `rows`. */
  private stopCatchUp(): void {
    if (!this.indexing) return;
    this.catchUpRun++;
    this.mergeBack();
  }

  /** The frozen rows back into `rows`, where a newer copy of a row wins. */
  private mergeBack(): void {
    const frozen = this.indexing;
    this.indexing = undefined;
    if (!frozen) return;
    for (const [id, r] of frozen) if (!this.rows.has(id)) this.rows.set(id, r);
    this.oldestUnindexed ??= Date.now();
  }
}
