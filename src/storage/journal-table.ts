/**
 * The journal's SQLite table (`journal.sqlite`) and its migrations: the index of every call a device
 * identity was asked to run, read by replays, listings, recovery and the outbox. Written only by the
 * journal's catch-up (`journal.ts`), in batches of rows the log already holds durably.
 */
import type Database from 'better-sqlite3';
import { openDatabase, type SyncLevel } from './sqlite.js';
import { migrate, type Migration, type Schema } from './migrations.js';
import type { CallState } from '../protocol/messages.js';

/** Journal migrations; each has a test that migrates a database holding rows (test/agent/journal-migrations.test.ts). */
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

/** The journal's schema, for the migration runner. */
export const JOURNAL_SCHEMA: Schema = { name: 'journal', migrations: JOURNAL_MIGRATIONS };

/** The device identity rows belong to. */
export interface Scope {
  workspaceId: string;
  deviceId: string;
}

/** One call as the journal holds it (in memory until the table catches up, then in the table). */
export interface Row {
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

/** A page of `list`. */
export interface ListOptions {
  sinceMs?: number;
  states?: string[];
  limit: number;
  cursor?: { ms: number; id: string };
}

/** The table, with the statements the journal runs on it. */
export class JournalTable {
  readonly db: Database.Database;
  private readonly st;
  private readonly upsertTx: (scope: Scope, rows: Iterable<Row>) => void;

  /** Opens and migrates; exclusive, because two agents sharing a data directory would break deduplication. */
  constructor(path: string, sync: SyncLevel) {
    let db: Database.Database | undefined;
    try {
      db = openDatabase(path, sync, true);
      migrate(db, JOURNAL_SCHEMA);
    } catch (e) {
      db?.close();
      const busy = (x: unknown) => (x as { code?: string } | undefined)?.code === 'SQLITE_BUSY';
      if (busy(e) || busy((e as { cause?: unknown }).cause)) {
        throw new Error(`the journal ${path} is in use by another agent; run one agent per data directory`, { cause: e });
      }
      throw e;
    }
    this.db = db;
    const kp = 'workspace_id = ? AND device_id = ? AND call_id = ?';
    this.st = {
      get: this.db.prepare(`SELECT * FROM calls WHERE ${kp}`),
      has: this.db.prepare(`SELECT 1 FROM calls WHERE ${kp}`).pluck(),
      upsert: this.db.prepare(`INSERT INTO calls (workspace_id, device_id, call_id, function, args_digest, state, outcome, tombstone, delivered, accepted_at, started_at, finished_at, created_ms, updated_ms)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (workspace_id, device_id, call_id) DO UPDATE SET state = excluded.state, outcome = excluded.outcome, tombstone = excluded.tombstone,
          delivered = excluded.delivered, started_at = excluded.started_at, finished_at = excluded.finished_at, updated_ms = excluded.updated_ms`),
      finish: this.db.prepare(`UPDATE calls SET state = ?, outcome = ?, finished_at = ?, delivered = ?, updated_ms = ? WHERE ${kp}`),
      unfinished: this.db.prepare(`SELECT * FROM calls WHERE workspace_id = ? AND device_id = ? AND outcome IS NULL AND tombstone = 0`),
      outbox: this.db.prepare(`SELECT outcome FROM calls WHERE workspace_id = @ws AND device_id = @dev AND delivered = 0 AND outcome IS NOT NULL ORDER BY finished_at LIMIT @limit`).pluck(),
      sweep: this.db.prepare(`DELETE FROM calls WHERE created_ms < @before AND (outcome IS NOT NULL OR tombstone = 1) AND delivered = 1`),
      ids: this.db.prepare(`SELECT call_id FROM calls WHERE workspace_id = ? AND device_id = ?`).pluck(),
      idsAfter: this.db.prepare(`SELECT call_id FROM calls WHERE workspace_id = ? AND device_id = ? AND call_id > ? ORDER BY call_id LIMIT ?`).pluck(),
      count: this.db.prepare(`SELECT count(*) FROM calls WHERE workspace_id = ? AND device_id = ?`).pluck(),
      metaGet: this.db.prepare(`SELECT value FROM meta WHERE key = ?`).pluck(),
      metaSet: this.db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`),
    };
    this.upsertTx = this.db.transaction((scope: Scope, rows: Iterable<Row>) => {
      const { workspaceId: ws, deviceId: dev } = scope;
      for (const r of rows) {
        this.st.upsert.run(ws, dev, r.callId, r.fn, r.digest, r.state, r.outcomeJson, r.tombstone ? 1 : 0, r.delivered ? 1 : 0, r.acceptedAt, r.startedAt, r.finishedAt, r.createdMs, r.updatedMs);
      }
    });
  }

  /** A row, if the table holds it. */
  get(scope: Scope, callId: string): Row | undefined {
    const r = this.st.get.get(scope.workspaceId, scope.deviceId, callId) as Record<string, unknown> | undefined;
    return r ? fromTable(r) : undefined;
  }

  /** True when the table holds the id. */
  has(scope: Scope, callId: string): boolean {
    return this.st.has.get(scope.workspaceId, scope.deviceId, callId) !== undefined;
  }

  /** Writes the rows (inserting or updating each) in one transaction: all of them or none. */
  upsert(scope: Scope, rows: Iterable<Row>): void {
    this.upsertTx(scope, rows);
  }

  /** How many rows the identity has. */
  count(scope: Scope): number {
    return this.st.count.get(scope.workspaceId, scope.deviceId) as number;
  }

  /** Every id of the identity (a scan: start-up only). */
  ids(scope: Scope): IterableIterator<string> {
    return this.st.ids.iterate(scope.workspaceId, scope.deviceId) as IterableIterator<string>;
  }

  /** Up to `limit` ids after `after`, in id order (a scan in steps that leave the event loop free in between). */
  idsAfter(scope: Scope, after: string, limit: number): string[] {
    return this.st.idsAfter.all(scope.workspaceId, scope.deviceId, after, limit) as string[];
  }

  /** Outcomes (their JSON) not yet acknowledged, oldest first. */
  outbox(scope: Scope, limit: number): string[] {
    return this.st.outbox.all({ ws: scope.workspaceId, dev: scope.deviceId, limit }) as string[];
  }

  /** Calls newest first, keyset-paginated by (created_ms, call_id); tombstones are left out. */
  list(scope: Scope, opts: ListOptions): { rows: Row[]; next?: { ms: number; id: string } } {
    const where = ['workspace_id = @ws', 'device_id = @dev', 'tombstone = 0'];
    const p: Record<string, unknown> = { ws: scope.workspaceId, dev: scope.deviceId, limit: opts.limit + 1 };
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
    const page = raw.slice(0, opts.limit).map(fromTable);
    const last = page.at(-1);
    return { rows: page, ...(more && last ? { next: { ms: last.createdMs, id: last.callId } } : {}) };
  }

  /** Rows with neither an outcome nor a tombstone (what crash recovery looks at). */
  unfinished(scope: Scope): Row[] {
    return (this.st.unfinished.all(scope.workspaceId, scope.deviceId) as Record<string, unknown>[]).map(fromTable);
  }

  /** Writes outcomes onto existing rows, undelivered, in one transaction. */
  finishAll(scope: Scope, outcomes: readonly { callId: string; state: CallState; json: string; finishedAt: string; ms: number }[]): void {
    this.db.transaction(() => {
      for (const o of outcomes) this.st.finish.run(o.state, o.json, o.finishedAt, 0, o.ms, scope.workspaceId, scope.deviceId, o.callId);
    })();
  }

  /** Deletes delivered terminal rows and tombstones created before `beforeMs`; returns how many. */
  sweep(beforeMs: number): number {
    return this.st.sweep.run({ before: beforeMs }).changes;
  }

  metaGet(key: string): string | undefined {
    return this.st.metaGet.get(key) as string | undefined;
  }

  metaSet(key: string, value: string): void {
    this.st.metaSet.run(key, value);
  }

  close(): void {
    this.db.close();
  }
}

function fromTable(r: Record<string, unknown>): Row {
  return {
    callId: r['call_id'] as string,
    fn: r['function'] as string,
    digest: r['args_digest'] as string,
    state: r['state'] as CallState,
    outcomeJson: (r['outcome'] as string | null) ?? null,
    tombstone: r['tombstone'] === 1,
    delivered: r['delivered'] === 1,
    acceptedAt: (r['accepted_at'] as string | null) ?? null,
    startedAt: (r['started_at'] as string | null) ?? null,
    finishedAt: (r['finished_at'] as string | null) ?? null,
    createdMs: r['created_ms'] as number,
    updatedMs: r['updated_ms'] as number,
  };
}
