/**
 * Remembered consent decisions: "allow/deny this function for this resource, for this session or
 * always". Kept in the consent database so the CLI can list and revoke them while the agent runs; the
 * agent caches them until another process writes the database, so a revoke takes effect for the next call.
 */
import type { Db } from './db.js';
import { dataVersion, statement } from '../storage/sqlite.js';

/** allow or deny. */
export type DecisionEffect = 'allow' | 'deny';
/** `session` lasts until the agent process that recorded it stops; `always` until revoked. */
export type DecisionScope = 'session' | 'always';

/** One remembered decision. */
export interface RememberedDecision {
  id: number;
  user_id: string;
  function_id: string;
  resource: string;
  effect: DecisionEffect;
  scope: DecisionScope;
  session_id: string | null;
  created_at: string;
}

/** What to remember. */
export interface NewDecision {
  userId: string;
  functionId: string;
  resource: string;
  effect: DecisionEffect;
  scope: DecisionScope;
}

/** Reads and writes remembered decisions for one agent session (or for the CLI, with no session). */
export class DecisionsStore {
  /** Lookups cached until this process writes or another process commits (a CLI revoke is seen on the next call). */
  private readonly cache = new Map<string, RememberedDecision | undefined>();
  private version = -1;

  constructor(
    private readonly db: Db,
    /** The running agent's session id; session-scoped rows of other sessions never match. */
    private readonly sessionId: string | null = null,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Forgets session-scoped decisions left by agent processes other than this one. */
  dropStaleSessions(): number {
    this.cache.clear();
    return this.db
      .prepare(`DELETE FROM decisions WHERE scope = 'session' AND (session_id IS NULL OR session_id != ?)`)
      .run(this.sessionId ?? '').changes;
  }

  /** Remembers a decision, replacing any earlier one for the same user, function and resource. */
  remember(d: NewDecision): RememberedDecision {
    this.cache.clear();
    const createdAt = this.now().toISOString();
    const sessionId = d.scope === 'session' ? this.sessionId : null;
    const id = this.db.transaction(() => {
      this.db
        .prepare('DELETE FROM decisions WHERE user_id = ? AND function_id = ? AND resource = ?')
        .run(d.userId, d.functionId, d.resource);
      return this.db
        .prepare(
          'INSERT INTO decisions (user_id, function_id, resource, effect, scope, session_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        )
        .run(d.userId, d.functionId, d.resource, d.effect, d.scope, sessionId, createdAt).lastInsertRowid;
    })();
    return {
      id: Number(id), user_id: d.userId, function_id: d.functionId, resource: d.resource,
      effect: d.effect, scope: d.scope, session_id: sessionId, created_at: createdAt,
    };
  }

  /**
   * The decision that applies to a call: an exact resource match wins over a '*' one, newer over older.
   * Session-scoped rows only match the session that recorded them.
   */
  lookup(userId: string, functionId: string, resource: string): RememberedDecision | undefined {
    const v = dataVersion(this.db);
    if (v !== this.version) {
      this.cache.clear();
      this.version = v;
    }
    const key = `${userId}\u0000${functionId}\u0000${resource}`;
    if (this.cache.has(key)) return this.cache.get(key);
    const found = statement(
      this.db,
      `SELECT * FROM decisions
         WHERE user_id = ? AND function_id = ? AND resource IN (?, '*')
           AND (scope = 'always' OR session_id = ?)
         ORDER BY (resource = ?) DESC, id DESC LIMIT 1`,
    ).get(userId, functionId, resource, this.sessionId ?? '\u0000', resource) as RememberedDecision | undefined;
    this.cache.set(key, found);
    return found;
  }

  /** All remembered decisions, newest first; optionally only allows (the user's grants). */
  list(filter: { effect?: DecisionEffect; functionId?: string } = {}): RememberedDecision[] {
    const where: string[] = [];
    const args: string[] = [];
    if (filter.effect) { where.push('effect = ?'); args.push(filter.effect); }
    if (filter.functionId) { where.push('function_id = ?'); args.push(filter.functionId); }
    const sql = `SELECT * FROM decisions ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC`;
    return this.db.prepare(sql).all(...args) as RememberedDecision[];
  }

  /** Forgets one decision; true when it existed. */
  revoke(id: number): boolean {
    this.cache.clear();
    return this.db.prepare('DELETE FROM decisions WHERE id = ?').run(id).changes > 0;
  }
}
