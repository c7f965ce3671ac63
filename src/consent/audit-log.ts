/**
 * The audit trail: one row per finished call, with who asked, what, a redacted summary of the
 * arguments, how consent was decided, the final state, the duration and the error type. Rows older
 * than the retention period are pruned. Never stores argument values beyond `redact.ts`'s summary.
 */
import type { Db } from './db.js';
import { redactArgs } from './redact.js';
import { AUDIT_PRUNE, inThreadWriter, type AuditWriter } from './audit-writer.js';
import { GroupCommit } from '../storage/group-commit.js';

/** One audit row as listed by the CLI and the control API. */
export interface AuditEntry {
  id: number;
  call_id: string;
  function_id: string;
  requester_kind: string | null;
  requester_id: string | null;
  requester_name: string | null;
  workspace_id: string | null;
  user_id: string | null;
  args_summary: unknown;
  /** The resources the call touched, by the names people know them by (a grant's alias); null when none were resolved. */
  resources: { kind: string; label: string }[] | null;
  /** The runtime the bridge attested for the call (protocol 1.2 §6.1); null when none did (an unverified runtime). */
  runtime_id: string | null;
  runtime_name: string | null;
  decision: string | null;
  decided_by: string | null;
  remembered: boolean;
  state: string;
  error_type: string | null;
  duration_ms: number | null;
  accepted_at: string | null;
  finished_at: string;
}

/** Filters for `list`. */
export interface AuditFilter {
  functionId?: string;
  state?: string;
  /** ISO time; only calls finished at or after it. */
  since?: string;
  /** ISO time; only calls finished at or before it. */
  until?: string;
  /** Only calls whose requester has this id or this name (exactly). */
  requester?: string;
  limit?: number;
}

/** What the dispatcher hands over for a finished call (the seam's type). */
export type { FinishedCall } from '../seams/call-seams.js';
import type { FinishedCall } from '../seams/call-seams.js';

/** How long recorded calls wait to be written together. */
export const AUDIT_BATCH_MS = 25;
/** After a batch could not be written, the next attempt comes this much later. */
const AUDIT_RETRY_MS = 1000;

/** "30m", "2h", "7d" or an ISO time → ISO time (the `since` filter of the CLI and the control API). */
export function parseSince(t: string, now = Date.now()): string {
  const m = /^(\d+)\s*(s|m|h|d)$/.exec(t.trim());
  if (m) {
    const unit = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[m[2] as 's' | 'm' | 'h' | 'd'];
    return new Date(now - Number(m[1]) * unit).toISOString();
  }
  const ms = Date.parse(t);
  if (Number.isNaN(ms)) throw new Error(`since: "${t}" is neither a time nor a duration like 30m, 2h or 7d.`);
  return new Date(ms).toISOString();
}

/** Default retention of audit rows. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 90;
const PRUNE_EVERY = 200;

/** The most rows one audit batch commits; a larger backlog is committed in several. */
const AUDIT_MAX_BATCH = 1024;

/** Appends and queries audit rows in the consent database. */
export class AuditLog {
  private sincePrune = 0;
  private closed = false;
  /**
   * Rows not yet written: recorded calls are written together, one commit per batch, AUDIT_BATCH_MS after
   * the first of them; a batch that could not be written is kept and tried again AUDIT_RETRY_MS later.
   */
  private readonly rows: GroupCommit<unknown[]>;

  constructor(
    private readonly db: Db,
    private readonly retentionDays: number = DEFAULT_AUDIT_RETENTION_DAYS,
    private readonly now: () => Date = () => new Date(),
    /** Commits the batches: in this thread by default; the agent passes a worker-backed writer. */
    private readonly writer: AuditWriter = inThreadWriter(db),
    /** Told when a batch written in the background could not be (its rows are kept and retried). */
    onError: (e: unknown) => void = () => undefined,
  ) {
    this.rows = new GroupCommit<unknown[]>({
      commit: (rows) => this.commit(rows),
      timing: () => AUDIT_BATCH_MS,
      maxBatch: AUDIT_MAX_BATCH,
      retryMs: AUDIT_RETRY_MS,
      onError,
      closedError: () => new Error('the audit log is closed'),
    });
  }

  /** Records a finished call; replayed outcomes are not new calls and are skipped. */
  record(c: FinishedCall): void {
    const o = c.outcome;
    // After close the database is about to close too: a call finishing then is not recorded (as before).
    if (o.replayed || this.closed) return;
    // Off the call path: rows wait up to AUDIT_BATCH_MS and go in one commit (they are also written
    // before every read and at close; a crash can lose at most that window of audit rows, never a
    // journal row).
    this.rows.push([
        o.call_id, o.function, c.requester?.kind ?? null, c.requester?.id ?? null, c.requester?.name ?? null,
        c.workspaceId, c.userId, redactArgs(c.args),
        o.confirmation?.decision ?? null, o.confirmation?.decided_by ?? null, o.confirmation?.remembered ? 1 : 0,
        o.state, o.error?.type ?? null, o.duration_ms ?? null, o.accepted_at ?? null,
        o.finished_at ?? this.now().toISOString(),
        c.resources?.length ? JSON.stringify(c.resources.map((r) => ({ kind: r.kind, label: r.label ?? r.id }))) : null,
        c.runtime?.id ?? null, c.runtime?.name ?? null,
      ]);
  }

  /** Writes pending rows (also before every read, and at close); throws when a batch could not be written (it is kept). */
  flush(): void {
    if (!this.db.open) return;
    this.rows.flush();
  }

  /** One batch: every PRUNE_EVERY rows the writer also deletes what has outlived the retention period. */
  private commit(rows: readonly unknown[][]): void {
    // The database closes only when the agent stops: rows that reach it then could never be written.
    if (!this.db.open) return;
    this.sincePrune += rows.length;
    let cutoff: string | undefined;
    if (this.sincePrune >= PRUNE_EVERY) {
      this.sincePrune = 0;
      cutoff = this.cutoff();
    }
    this.writer.write(rows as unknown[][], cutoff);
  }

  private cutoff(): string {
    return new Date(this.now().getTime() - this.retentionDays * 86_400_000).toISOString();
  }

  /** Writes pending rows and waits until every row recorded so far is committed. */
  private settle(): void {
    this.flush();
    this.writer.sync();
  }

  /** Writes what is pending and stops the writer (before the database is closed). */
  close(): void {
    this.closed = true;
    this.rows.close();
    this.writer.close();
  }

  /** Deletes rows older than the retention period; returns how many. */
  prune(): number {
    this.sincePrune = 0;
    this.settle();
    return this.db.prepare(AUDIT_PRUNE).run(this.cutoff()).changes;
  }

  /** Newest first. */
  list(f: AuditFilter = {}): AuditEntry[] {
    this.settle();
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (f.functionId) { where.push('function_id = ?'); args.push(f.functionId); }
    if (f.state) { where.push('state = ?'); args.push(f.state); }
    if (f.since) { where.push('finished_at >= ?'); args.push(f.since); }
    if (f.until) { where.push('finished_at <= ?'); args.push(f.until); }
    if (f.requester) { where.push('(requester_id = ? OR requester_name = ?)'); args.push(f.requester, f.requester); }
    const limit = Math.max(1, Math.min(f.limit ?? 100, 10_000));
    const rows = this.db
      .prepare(`SELECT * FROM audit ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ${limit}`)
      .all(...args) as (Omit<AuditEntry, 'remembered' | 'args_summary' | 'resources'> & { remembered: number; args_summary: string | null; resources: string | null })[];
    return rows.map((r) => ({
      ...r,
      remembered: r.remembered === 1,
      args_summary: r.args_summary === null ? null : (JSON.parse(r.args_summary) as unknown),
      resources: r.resources === null ? null : (JSON.parse(r.resources) as AuditEntry['resources']),
    }));
  }
}
