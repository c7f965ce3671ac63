/**
 * Rate limits shared by every node of a clustered bridge (issue 34), in PostgreSQL (migration 0008): the runtime
 * API's token bucket per runtime token and the sign-in routes' failure counters, so a burst spread over the nodes
 * by a load balancer meets one budget, not one per node. Each take is one atomic statement on the key's row
 * (`INSERT … ON CONFLICT DO UPDATE … RETURNING`: the row lock orders concurrent takes from any node), computed
 * on the database's clock. Keys are stored as SHA-256 hashes: a runtime token never lands in the database. A
 * failure to reach the database rejects with `StoreUnavailableError` (503 `store_unavailable`), never a 500.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { RateLimit } from '../http-util.js';
import type { AttemptLimits } from '../oauth/rate-limit.js';
import { storeError } from './pg-store.js';

/** Idle rows older than this are deleted (a bucket idle that long is full again for any sane rate; a lockout over). */
const IDLE_ROW_S = 3600;
/** One sweep of idle rows per this many statements of one {@link PgRateLimits}. */
const SWEEP_EVERY = 500;

/** The refilled level of the stored bucket `b` at the statement's time (`now()`), capped at the burst ($3). */
const LEVEL = `least($3::float8, b.tokens + greatest(0, extract(epoch FROM now() - b.at)) * $2::float8)`;

const TAKE = `
  INSERT INTO rate_buckets AS b (key, tokens, ok, at) VALUES ($1, $3::float8 - 1, true, now())
  ON CONFLICT (key) DO UPDATE SET
    tokens = ${LEVEL} - CASE WHEN ${LEVEL} >= 1 THEN 1 ELSE 0 END,
    ok = ${LEVEL} >= 1,
    at = greatest(b.at, now())
  RETURNING tokens, ok`;

const FAIL = `
  INSERT INTO rate_attempts AS a (key, count, reset_at) VALUES ($1, 1, now() + $2::float8 * interval '1 millisecond')
  ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN a.reset_at <= now() THEN 1 ELSE a.count + 1 END,
    reset_at = CASE WHEN a.reset_at <= now() THEN now() + $2::float8 * interval '1 millisecond' ELSE a.reset_at END`;

const STATE = `SELECT count >= $2 AS blocked, greatest(0, ceil(extract(epoch FROM reset_at - now()) * 1000)) AS wait_ms
  FROM rate_attempts WHERE key = $1 AND reset_at > now()`;

/** The cluster's shared rate limits over the store's pool. */
export class PgRateLimits {
  private statements = 0;

  constructor(private readonly pool: pg.Pool) {}

  /** A token bucket per key (`perSecond` flow in, at most `burst` held), named so that two limits never share rows. */
  buckets(name: string, perSecond: number, burst: number): RateLimit {
    return {
      take: async (key) => {
        const r = await this.query<{ tokens: number; ok: boolean }>(TAKE, [this.key(name, key), perSecond, burst]);
        const row = r.rows[0]!;
        return row.ok ? 0 : Math.max(1, Math.ceil(((1 - row.tokens) / perSecond) * 1000));
      },
    };
  }

  /** A failure counter per key: `max` failures per `windowMs`, counted from the first failure of the window. */
  attempts(name: string, max: number, windowMs: number): AttemptLimits {
    const state = async (key: string) => (await this.query<{ blocked: boolean; wait_ms: string | number }>(STATE, [this.key(name, key), max])).rows[0];
    return {
      blocked: async (key) => (await state(key))?.blocked ?? false,
      fail: async (key) => {
        await this.query(FAIL, [this.key(name, key), windowMs]);
      },
      retryAfterMs: async (key) => {
        const s = await state(key);
        return s?.blocked ? Number(s.wait_ms) : 0;
      },
    };
  }

  private key(name: string, key: string): string {
    return createHash('sha256').update(`${name}\0${key}`, 'utf8').digest('hex');
  }

  private async query<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    if (++this.statements % SWEEP_EVERY === 0) void this.sweep().catch(() => undefined);
    try {
      return await this.pool.query<R>(sql, params);
    } catch (e) {
      throw storeError(e);
    }
  }

  /** Deletes idle buckets and ended lockouts, so the tables hold only keys in use. */
  async sweep(): Promise<void> {
    await this.pool.query(`DELETE FROM rate_buckets WHERE at < now() - $1::float8 * interval '1 second'`, [IDLE_ROW_S]);
    await this.pool.query(`DELETE FROM rate_attempts WHERE reset_at < now()`);
  }
}
