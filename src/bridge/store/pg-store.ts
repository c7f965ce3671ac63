/**
 * The clustered bridge's store on PostgreSQL (issue 34): a `pg.Pool`, the schema from the SQL files in
 * `pg-migrations/` (applied at open), rows read back into the same records as SQLite's.
 */
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { WireError } from '../../protocol/errors.js';
import { migratePg, type PgSchema } from '../../storage/pg-migrate.js';
import { NODE_CHANNEL_PREFIX } from '../cluster/bus.js';
import { DEVICE_SELECT, deviceKey, deviceRow, toCall, toDevice, type DeviceUpdate, type RefusedHello, type StoredCall } from '../store.js';
import type { AsyncBridgeStore, CallKey, ClusterNodeRecord, DeviceSession, FencedCall, FencedCallKey, HeartbeatResult, JoinResult, NodeConfigDigest, SentMark, StoreOps } from './async-store.js';

/** The bridge's PostgreSQL schema: its migration files sit beside this module (the build copies them). */
export const BRIDGE_PG_SCHEMA: PgSchema = { name: 'bridge', dir: fileURLToPath(new URL('./pg-migrations/', import.meta.url)) };

/** What a query runs on: the pool, or a transaction's client. */
type Queryable = pg.Pool | pg.PoolClient;

/** Options of {@link PgBridgeStore.open}. */
export interface PgStoreOptions {
  /** Connections in the pool (default 10). */
  max?: number;
  /** Told about errors of idle connections (the server went away); the pool replaces them. */
  onIdleError?: (e: Error) => void;
  /** How long a new connection may take (default {@link PG_CONNECT_TIMEOUT_MS}). */
  connectTimeoutMs?: number;
  /**
   * How long a query may go unanswered (default {@link PG_QUERY_TIMEOUT_MS}). A server that stops answering
   * (a partition, a frozen host) would otherwise hang every store call; the timed-out connection is dropped
   * and the pool opens a new one for the next call.
   */
  queryTimeoutMs?: number;
}

/** A new connection's time limit, by default. */
export const PG_CONNECT_TIMEOUT_MS = 5_000;
/** A query's time limit, by default: far above any of the store's queries, well under a caller's patience. */
export const PG_QUERY_TIMEOUT_MS = 15_000;

/**
 * The store cannot be reached (PostgreSQL down, restarting, out of connections, or silent past a time limit):
 * `store_unavailable` (-41062, PROTOCOL §2, §10). A constraint violation or a bad query is never this.
 */
export class StoreUnavailableError extends WireError {
  constructor(cause: unknown) {
    super('store_unavailable', 'The bridge cannot reach its database; try again later.', { retryable: true });
    this.cause = cause;
  }
}

/** Socket errors of a connection that is gone or never came (node's `code`). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * SQLSTATEs of a server that cannot serve: class 08 (connection exception), 57P01–57P03 (shut down, crashed,
 * starting up), 53300 (too many connections).
 */
const SERVER_CODES = /^(08...|57P0[123]|53300)$/;
/** What the `pg` driver throws, without a code, when its connection went away or a time limit passed. */
const DRIVER_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error)/;

/** True when `e` says the database could not be reached, rather than that it refused what was asked. */
export function isStoreUnreachable(e: unknown): boolean {
  if (e instanceof StoreUnavailableError) return true;
  if (!(e instanceof Error)) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string') return SOCKET_CODES.has(code) || SERVER_CODES.test(code);
  // A failed connect may reject with an AggregateError (one per address tried).
  if (e instanceof AggregateError) return e.errors.length > 0 && e.errors.every(isStoreUnreachable);
  return DRIVER_MESSAGES.test(e.message);
}

/** `e` as {@link StoreUnavailableError} when it says the database could not be reached, else `e` itself. */
export function storeError(e: unknown): unknown {
  return isStoreUnreachable(e) && !(e instanceof StoreUnavailableError) ? new StoreUnavailableError(e) : e;
}

/** Runs `p`, turning a failure to reach the database into {@link StoreUnavailableError}. */
export async function reaching<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw storeError(e);
  }
}

/**
 * Runs `fn` on one pooled client in a transaction: it commits, or rolls back when `fn` throws. A failure to
 * reach the database (at connect, or on any statement) rejects with {@link StoreUnavailableError}. Every
 * PostgreSQL store of the bridge (calls, sign-in, blobs, MCP sessions) takes its transactions here.
 * `carry`: the BEGIN waits in it and goes with the transaction's first statement, and what else waits there
 * goes with the COMMIT (the bridge store's transactions: {@link Carry}); `fn` must then query through it.
 */
export async function pgTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient, carry?: Carry) => Promise<T>, carried = false): Promise<T> {
  const client = await reaching(pool.connect());
  let broken = false;
  // The pool hears a client's errors only while it is idle: one checked out here whose connection drops
  // (PostgreSQL stopped or restarted mid-transaction) emits 'error', which unheard would end the process.
  // The statement running, or the next one, fails with the same cause and is answered store_unavailable.
  const dropped = () => (broken = true);
  client.on('error', dropped);
  try {
    const carry = carried ? new Carry(client) : undefined;
    if (carry) carry.push('BEGIN');
    else await client.query('BEGIN');
    const out = await fn(client, carry);
    await (carry ? carry.send('COMMIT') : client.query('COMMIT'));
    return out;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => (broken = true));
    throw storeError(e);
  } finally {
    client.off('error', dropped);
    // A client that could not roll back, or whose connection dropped, is not given to the next caller.
    client.release(broken);
  }
}

/**
 * What a bridge store transaction sends with its next statement instead of in a round trip of its own: its
 * BEGIN, and the writes whose result nobody reads (a call's save, a NOTIFY). They go ahead of the next
 * statement, or of the COMMIT, in one simple query (several statements, the parameters inlined as literals,
 * escaped as the driver escapes them): the transaction's reads still see its writes, a failing statement
 * fails the ones after it and the transaction, and the COMMIT needs no round trip of its own.
 */
export class Carry {
  private pending: string[] = [];
  constructor(private readonly client: pg.PoolClient) {}

  get waiting(): boolean {
    return this.pending.length > 0;
  }

  /** Keeps `sql` (its parameters inlined) for the next round trip. */
  push(sql: string, params: readonly unknown[] = []): void {
    this.pending.push(inline(sql, params));
  }

  /** Sends what waits, then `sql`, in one round trip; resolves with `sql`'s result. */
  async send<R extends pg.QueryResultRow>(sql: string, params: readonly unknown[] = []): Promise<pg.QueryResult<R>> {
    const text = [...this.pending, inline(sql, params)].join(';\n');
    this.pending = [];
    const r = (await this.client.query<R>(text)) as pg.QueryResult<R> | pg.QueryResult<R>[];
    return Array.isArray(r) ? r[r.length - 1]! : r;
  }
}

/** `sql` with its `$n` parameters as literals, typed by the server as the driver's text parameters are (unknown). */
function inline(sql: string, params: readonly unknown[]): string {
  return params.length ? sql.replace(/\$(\d+)/g, (_, n: string) => literal(params[Number(n) - 1])) : sql;
}

/** A parameter as a literal: text as the driver sends it, quoted and escaped; null as NULL; a list of text as an array. */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (Array.isArray(v)) return literal(textArray(v));
  const text = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' ? String(v) : undefined;
  // A NUL cannot be sent in a query's text (nor as a text parameter).
  if (text === undefined || text.includes('\0')) throw new TypeError(`cannot inline a ${typeof v} parameter`);
  return pg.escapeLiteral(text);
}

/** A list of text as PostgreSQL's array input reads it (`{"a","b\"c"}`), each element quoted and escaped. */
function textArray(list: readonly unknown[]): string {
  return `{${list.map((e) => {
    if (typeof e !== 'string') throw new TypeError(`cannot inline a ${typeof e} array element`);
    return `"${e.replace(/[\\"]/g, (ch) => `\\${ch}`)}"`;
  }).join(',')}}`;
}

/** The PostgreSQL implementation of {@link AsyncBridgeStore}. */
export class PgBridgeStore implements AsyncBridgeStore {
  readonly kind = 'postgres' as const;
  private readonly ops: StoreOps;

  private constructor(readonly pool: pg.Pool) {
    this.ops = pgOps(pool, (fn) => this.transaction(fn));
  }

  /** Connects to `url`, applies the missing migrations, and returns the store. */
  static async open(url: string, opts: PgStoreOptions = {}): Promise<PgBridgeStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: opts.max ?? 10,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? PG_CONNECT_TIMEOUT_MS,
      query_timeout: opts.queryTimeoutMs ?? PG_QUERY_TIMEOUT_MS,
      // A dead peer is noticed by the kernel even on an idle connection.
      keepAlive: true,
    });
    // An idle client's error is emitted on the pool; unheard, it would end the process.
    pool.on('error', (e) => opts.onIdleError?.(e));
    try {
      await migratePg(pool, BRIDGE_PG_SCHEMA);
    } catch (e) {
      await pool.end();
      throw e;
    }
    return new PgBridgeStore(pool);
  }

  async transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T> {
    // The BEGIN, the saves and the NOTIFYs travel with the next statement or the COMMIT (Carry): a fenced
    // write of a call is two round trips (BEGIN and the fenced read; the save, its NOTIFY and the COMMIT).
    return pgTransaction(this.pool, async (client, carry) => {
      // Nested transactions (saveCalls inside one) join this one.
      const tx: StoreOps = pgOps(client, (inner) => inner(tx), carry);
      return fn(tx);
    }, true);
  }

  insertCall(c: StoredCall) { return this.ops.insertCall(c); }
  submitCall(c: StoredCall, payload: string) { return this.ops.submitCall(c, payload); }
  getCall(ws: string, id: string, forUpdate?: boolean) { return this.ops.getCall(ws, id, forUpdate); }
  getCalls(keys: readonly CallKey[]) { return this.ops.getCalls(keys); }
  openCalls(deviceId?: string) { return this.ops.openCalls(deviceId); }
  claimExpiredCalls(graceMs: number, limit: number) { return this.ops.claimExpiredCalls(graceMs, limit); }
  findByDevice(ws: string, dev: string, id: string) { return this.ops.findByDevice(ws, dev, id); }
  unresolvedUnknowns(ws: string, dev: string, since: string) { return this.ops.unresolvedUnknowns(ws, dev, since); }
  saveCall(c: StoredCall) { return this.ops.saveCall(c); }
  saveCalls(calls: Iterable<StoredCall>) { return this.ops.saveCalls(calls); }
  pruneEndedCalls(beforeIso: string, limit: number) { return this.ops.pruneEndedCalls(beforeIso, limit); }
  refusedHello(ws: string, dev: string) { return this.ops.refusedHello(ws, dev); }
  saveRefusedHello(ws: string, dev: string, h: RefusedHello) { return this.ops.saveRefusedHello(ws, dev, h); }
  clearRefusedHello(ws: string, dev: string) { return this.ops.clearRefusedHello(ws, dev); }
  refusedHelloKeys() { return this.ops.refusedHelloKeys(); }
  upsertDevice(d: DeviceUpdate, replace = true) { return this.ops.upsertDevice(d, replace); }
  getDevice(ws: string, dev: string) { return this.ops.getDevice(ws, dev); }
  callTarget(ws: string, dev: string, fn: string) { return this.ops.callTarget(ws, dev, fn); }
  adapterCard(ws: string, dev: string) { return this.ops.adapterCard(ws, dev); }
  devices(ws: string) { return this.ops.devices(ws); }
  notify(channel: string, payload: string) { return this.ops.notify(channel, payload); }
  claimSession(ws: string, dev: string, node: string, leaseMs: number, protocolVersion?: string) { return this.ops.claimSession(ws, dev, node, leaseMs, protocolVersion); }
  isCurrent(ws: string, dev: string, epoch: number) { return this.ops.isCurrent(ws, dev, epoch); }
  session(ws: string, dev: string, hold?: boolean) { return this.ops.session(ws, dev, hold); }
  fencedCalls(items: readonly FencedCallKey[]) { return this.ops.fencedCalls(items); }
  markSent(items: readonly FencedCallKey[]) { return this.ops.markSent(items); }
  renewLeases(node: string, leaseMs: number) { return this.ops.renewLeases(node, leaseMs); }
  releaseSession(ws: string, dev: string, epoch: number) { return this.ops.releaseSession(ws, dev, epoch); }
  lapsedSessions() { return this.ops.lapsedSessions(); }
  nodeSessions(nodeId: string) { return this.ops.nodeSessions(nodeId); }
  openCallsOfNode(nodeId: string) { return this.ops.openCallsOfNode(nodeId); }

  /** The devices of a workspace whose session is live (claimed, its lease not lapsed), on any node. */
  async liveDevices(workspaceId: string): Promise<string[]> {
    return (await reaching(this.pool.query<{ device_id: string }>(`SELECT device_id FROM device_sessions WHERE workspace_id = $1 AND lease_until > now()`, [workspaceId]))).rows.map((r) => r.device_id);
  }

  async joinCluster(nodeId: string, config: NodeConfigDigest, liveMs: number): Promise<JoinResult> {
    return this.withClient(async (c) => {
      // One joining node at a time: the check and the write below are one step for the cluster.
      await c.query(`SELECT pg_advisory_xact_lock(hashtext('aios cluster join'))`);
      // A live row with this node id is another process's (a clean stop removes the row): two processes
      // with one id would LISTEN on one channel and both act for its devices.
      const same = await c.query<Record<string, unknown>>(`SELECT * FROM cluster_nodes WHERE node_id = $1 AND last_seen > now() - $2 * interval '1 millisecond'`, [nodeId, liveMs]);
      if (same.rows.length) return { joined: false as const, taken: nodeOf(same.rows[0]!) };
      const live = await c.query<Record<string, unknown>>(
        `SELECT * FROM cluster_nodes WHERE node_id <> $1 AND last_seen > now() - $2 * interval '1 millisecond' AND config_digest <> $3 ORDER BY node_id COLLATE "C"`,
        [nodeId, liveMs, config.digest],
      );
      if (live.rows.length) return { joined: false as const, differing: live.rows.map(nodeOf) };
      // started_at in whole milliseconds, so that it survives the trip through a JavaScript Date and back.
      const row = await c.query<{ started_at: Date }>(
        `INSERT INTO cluster_nodes (node_id, config_digest, config_keys, started_at, last_seen) VALUES ($1, $2, $3, date_trunc('milliseconds', now()), now())
         ON CONFLICT (node_id) DO UPDATE SET config_digest = EXCLUDED.config_digest, config_keys = EXCLUDED.config_keys, started_at = EXCLUDED.started_at, last_seen = now()
         RETURNING started_at`,
        [nodeId, config.digest, JSON.stringify(config.keys)],
      );
      return { joined: true as const, started_at: row.rows[0]!.started_at.toISOString() };
    });
  }

  async nodeHeartbeat(nodeId: string, startedAt: string): Promise<HeartbeatResult> {
    const r = await reaching(this.pool.query<{ mine: boolean }>(
      `WITH renewed AS (UPDATE cluster_nodes SET last_seen = now() WHERE node_id = $1 AND started_at = $2 RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM renewed) AS mine, EXISTS (SELECT 1 FROM cluster_nodes WHERE node_id = $1) AS present`,
      [nodeId, startedAt],
    ));
    const { mine, present } = r.rows[0] as { mine: boolean; present: boolean };
    return mine ? 'ok' : present ? 'taken' : 'gone';
  }

  async clusterNodes(): Promise<ClusterNodeRecord[]> {
    return (await reaching(this.pool.query<Record<string, unknown>>(`SELECT * FROM cluster_nodes ORDER BY node_id COLLATE "C"`))).rows.map(nodeOf);
  }

  async leaveCluster(nodeId: string, startedAt: string): Promise<void> {
    await reaching(this.pool.query(`DELETE FROM cluster_nodes WHERE node_id = $1 AND started_at = $2`, [nodeId, startedAt]));
  }

  private withClient<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return pgTransaction(this.pool, fn);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** A `cluster_nodes` row. */
function nodeOf(r: Record<string, unknown>): ClusterNodeRecord {
  return {
    node_id: r['node_id'] as string,
    config: { digest: r['config_digest'] as string, keys: JSON.parse(r['config_keys'] as string) as Record<string, string> },
    started_at: (r['started_at'] as Date).toISOString(),
    last_seen: (r['last_seen'] as Date).toISOString(),
  };
}

/** A call row in SQLite's shapes (flags 0/1, numbers), so one `toCall` reads both stores. */
function callOf(r: Record<string, unknown>): StoredCall {
  return toCall({ ...r, bridge_outcome: r['bridge_outcome'] ? 1 : 0, sent: r['sent'] ? 1 : 0, deadline_ms: Number(r['deadline_ms']) });
}

const json = (v: unknown) => (v ? JSON.stringify(v) : null);

/** The columns of a session, with whether its lease has lapsed by the database's clock. */
const SESSION_SELECT = `SELECT workspace_id, device_id, node_id, epoch, lease_until, lease_until <= now() AS lapsed, protocol_version FROM device_sessions`;

/** A session row (epoch is a bigint: the driver gives text; the sequence stays far below 2^53). */
function sessionOf(r: Record<string, unknown>): DeviceSession {
  return {
    workspace_id: r['workspace_id'] as string,
    device_id: r['device_id'] as string,
    node_id: r['node_id'] as string,
    epoch: Number(r['epoch']),
    lease_until: (r['lease_until'] as Date).toISOString(),
    lapsed: r['lapsed'] as boolean,
    protocol_version: (r['protocol_version'] as string | null) ?? null,
  };
}

/**
 * The operations over `q`; `inTransaction` runs a function in one transaction (a new one, or `q`'s). `carry`:
 * in a transaction, what waits for the next statement (its BEGIN; saves and NOTIFYs, whose results nobody reads).
 */
function pgOps(pool: Queryable, inTransaction: <T>(fn: (tx: StoreOps) => Promise<T>) => Promise<T>, carry?: Carry): StoreOps {
  // Every statement's failure to reach the database is store_unavailable (a transaction's, at its rollback too).
  const q = {
    query: <R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, params: unknown[]) => reaching(carry?.waiting ? carry.send<R>(sql, params) : pool.query<R>(sql, params)),
  };
  const rows = async (sql: string, params: unknown[]) => (await q.query<Record<string, unknown>>(sql, params)).rows;
  const saveCall = async (c: StoredCall): Promise<void> => {
    const sql = `UPDATE bridge_calls SET state = $3, outcome = $4, bridge_outcome = $5, timeline = $6, updated_at = $7, sent = $8, resolved_from = $9, device_outcome = $10, progress = $11
       WHERE workspace_id = $1 AND call_id = $2`;
    const params = [c.workspace_id, c.call_id, c.state, json(c.outcome), c.bridge_outcome, JSON.stringify(c.timeline), c.updated_at, c.sent, json(c.resolved_from), json(c.device_outcome), json(c.progress)];
    // In a transaction the save goes with the next statement or the COMMIT (nothing reads its row count).
    if (carry) carry.push(sql, params);
    else await q.query(sql, params);
  };
  return {
    async insertCall(c) {
      const r = await q.query(
        `INSERT INTO bridge_calls (workspace_id, call_id, device_id, function, args_digest, params, state, outcome, bridge_outcome, timeline, deadline_ms, deadline_at, created_at, updated_at, sent)
         VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, false, $8, $9, to_timestamp($9::bigint / 1000.0), $10, $11, $12)
         ON CONFLICT ON CONSTRAINT bridge_calls_idempotency DO NOTHING`,
        [c.workspace_id, c.call_id, c.device_id, c.function, c.args_digest, JSON.stringify(c.params), c.state, JSON.stringify(c.timeline), c.deadline_ms, c.created_at, c.updated_at, c.sent],
      );
      return r.rowCount === 1;
    },
    async submitCall(c, payload) {
      // The session held (FOR SHARE) until the statement commits, the insert only for a live session, and the
      // NOTIFY only for a row inserted, on the channel of the node holding the session: one round trip.
      const [r] = await rows(
        `WITH s AS MATERIALIZED (SELECT node_id, lease_until <= now() AS lapsed FROM device_sessions WHERE workspace_id = $1 AND device_id = $3 FOR SHARE),
         i AS (INSERT INTO bridge_calls (workspace_id, call_id, device_id, function, args_digest, params, state, outcome, bridge_outcome, timeline, deadline_ms, deadline_at, created_at, updated_at, sent)
               SELECT $1, $2, $3, $4, $5, $6, $7, NULL, false, $8, $9::bigint, to_timestamp($9::bigint / 1000.0), $10, $11, $12::boolean FROM s WHERE NOT s.lapsed
               ON CONFLICT ON CONSTRAINT bridge_calls_idempotency DO NOTHING RETURNING 1),
         n AS (SELECT pg_notify($13 || s.node_id, $14) FROM i, s)
         SELECT s.lapsed, (SELECT count(*) FROM i)::int AS inserted, (SELECT count(*) FROM n)::int AS told FROM (SELECT 1) one LEFT JOIN s ON true`,
        [c.workspace_id, c.call_id, c.device_id, c.function, c.args_digest, JSON.stringify(c.params), c.state, JSON.stringify(c.timeline), c.deadline_ms, c.created_at, c.updated_at, c.sent, NODE_CHANNEL_PREFIX, payload],
      );
      if (r!['lapsed'] !== false) return 'offline';
      return r!['inserted'] === 1 ? 'sent' : 'exists';
    },
    async getCall(ws, id, forUpdate = false) {
      const [r] = await rows(`SELECT * FROM bridge_calls WHERE workspace_id = $1 AND call_id = $2${forUpdate ? ' FOR UPDATE' : ''}`, [ws, id]);
      return r ? callOf(r) : undefined;
    },
    async getCalls(keys) {
      if (!keys.length) return [];
      const rs = await rows(
        `SELECT * FROM bridge_calls WHERE (workspace_id, call_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
        [keys.map((k) => k.workspace_id), keys.map((k) => k.call_id)],
      );
      const found = new Map(rs.map((r) => [`${r['workspace_id'] as string}/${r['call_id'] as string}`, r]));
      return keys.map((k) => {
        const r = found.get(`${k.workspace_id}/${k.call_id}`);
        return r ? callOf(r) : undefined;
      });
    },
    async claimExpiredCalls(graceMs, limit) {
      const rs = await rows(
        `SELECT * FROM bridge_calls WHERE outcome IS NULL AND deadline_at <= now() - $1 * interval '1 millisecond'
         ORDER BY deadline_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [graceMs, limit],
      );
      return rs.map(callOf);
    },
    async openCalls(deviceId) {
      const rs = deviceId === undefined
        ? await rows(`SELECT * FROM bridge_calls WHERE outcome IS NULL`, [])
        : await rows(`SELECT * FROM bridge_calls WHERE outcome IS NULL AND device_id = $1`, [deviceId]);
      return rs.map(callOf);
    },
    async findByDevice(ws, dev, id) {
      const [r] = await rows(`SELECT * FROM bridge_calls WHERE workspace_id = $1 AND device_id = $2 AND call_id = $3`, [ws, dev, id]);
      return r ? callOf(r) : undefined;
    },
    async unresolvedUnknowns(ws, dev, since) {
      const rs = await rows(
        `SELECT * FROM bridge_calls WHERE workspace_id = $1 AND device_id = $2 AND state = 'unknown' AND bridge_outcome AND updated_at >= $3 AND resolved_from IS NULL`,
        [ws, dev, since],
      );
      return rs.map(callOf);
    },
    saveCall,
    async pruneEndedCalls(before, limit) {
      const r = await q.query(
        `DELETE FROM bridge_calls WHERE (workspace_id, call_id) IN (
           SELECT workspace_id, call_id FROM bridge_calls WHERE outcome IS NOT NULL AND updated_at COLLATE "C" < $1
           ORDER BY updated_at COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [before, limit],
      );
      return r.rowCount ?? 0;
    },
    async saveCalls(calls) {
      const list = [...calls];
      if (list.length) await inTransaction(async (tx) => {
        for (const c of list) await tx.saveCall(c);
      });
    },
    async refusedHello(ws, dev) {
      const [r] = await rows(`SELECT type, message, at, client_version, minimum, protocol_version FROM bridge_refused_hellos WHERE workspace_id = $1 AND device_id = $2`, [ws, dev]);
      if (!r) return undefined;
      const { minimum, ...rest } = r as unknown as RefusedHello & { minimum: string | null };
      return { ...rest, ...(minimum ? { minimum } : {}) };
    },
    async saveRefusedHello(ws, dev, h) {
      await q.query(
        `INSERT INTO bridge_refused_hellos (workspace_id, device_id, type, message, at, client_version, minimum, protocol_version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (workspace_id, device_id) DO UPDATE SET type = EXCLUDED.type, message = EXCLUDED.message, at = EXCLUDED.at, client_version = EXCLUDED.client_version, minimum = EXCLUDED.minimum, protocol_version = EXCLUDED.protocol_version`,
        [ws, dev, h.type, h.message, h.at, h.client_version, h.minimum ?? null, h.protocol_version],
      );
    },
    async clearRefusedHello(ws, dev) {
      await q.query(`DELETE FROM bridge_refused_hellos WHERE workspace_id = $1 AND device_id = $2`, [ws, dev]);
    },
    async refusedHelloKeys() {
      return (await rows(`SELECT workspace_id, device_id FROM bridge_refused_hellos`, [])).map((r) => deviceKey(r['workspace_id'] as string, r['device_id'] as string));
    },
    async upsertDevice(d, replace = true) {
      const row = deviceRow(d);
      // Column names come from deviceRow's fixed list, never from the caller.
      const cols = Object.keys(row);
      const updates = cols.filter((c) => c !== 'workspace_id' && c !== 'device_id').map((c) => `${c} = EXCLUDED.${c}`);
      await q.query(
        `INSERT INTO bridge_devices (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})
         ON CONFLICT (workspace_id, device_id) DO ${updates.length && replace ? 'UPDATE SET ' + updates.join(', ') : 'NOTHING'}`,
        Object.values(row),
      );
    },
    async getDevice(ws, dev) {
      const [r] = await rows(`${DEVICE_SELECT} WHERE workspace_id = $1 AND device_id = $2`, [ws, dev]);
      return r ? toDevice(r) : undefined;
    },
    async callTarget(ws, dev, fn) {
      // The one function's default, from the defaults the server keeps beside the list (migration 0012): the
      // row's functions text is neither parsed per call nor sent here. A descriptor without a numeric default gives null.
      const [r] = await rows(
        `SELECT user_id, function_timeouts -> $3 AS t FROM bridge_devices WHERE workspace_id = $1 AND device_id = $2`,
        [ws, dev, fn],
      );
      if (!r) return undefined;
      const t = r['t'];
      return { user_id: r['user_id'] as string, ...(typeof t === 'number' ? { timeout_ms_default: t } : {}) };
    },
    async adapterCard(ws, dev) {
      const [r] = await rows(`SELECT adapter_card FROM bridge_devices WHERE workspace_id = $1 AND device_id = $2`, [ws, dev]);
      return typeof r?.['adapter_card'] === 'string' ? (JSON.parse(r['adapter_card']) as Record<string, unknown>) : null;
    },
    async devices(ws) {
      // COLLATE "C": by code point, as SQLite's ORDER BY orders text.
      return (await rows(`${DEVICE_SELECT} WHERE workspace_id = $1 ORDER BY device_id COLLATE "C"`, [ws])).map(toDevice);
    },
    async notify(channel, payload) {
      // pg_notify takes the channel as a value (NOTIFY would need it as an identifier). In a transaction it
      // waits for the COMMIT's round trip (the server would hold it until the commit anyway).
      if (carry) carry.push(`SELECT pg_notify($1, $2)`, [channel, payload]);
      else await q.query(`SELECT pg_notify($1, $2)`, [channel, payload]);
    },
    async claimSession(ws, dev, node, leaseMs, version) {
      // The old row is read and replaced under its lock, so two nodes claiming at once get different epochs
      // and each sees the session it replaced.
      if (pool instanceof pg.Pool) return inTransaction((tx) => tx.claimSession(ws, dev, node, leaseMs, version));
      for (;;) {
        const [old] = await rows(`${SESSION_SELECT} WHERE workspace_id = $1 AND device_id = $2 FOR UPDATE`, [ws, dev]);
        if (old) {
          const [r] = await rows(
            `UPDATE device_sessions SET node_id = $3, epoch = nextval('device_session_epoch'), lease_until = now() + $4 * interval '1 millisecond', protocol_version = $5
             WHERE workspace_id = $1 AND device_id = $2 RETURNING epoch`,
            [ws, dev, node, leaseMs, version ?? null],
          );
          const was = sessionOf(old);
          return { epoch: Number(r!['epoch']), previous: { node_id: was.node_id, epoch: was.epoch, lapsed: was.lapsed } };
        }
        const [r] = await rows(
          `INSERT INTO device_sessions (workspace_id, device_id, node_id, epoch, lease_until, protocol_version)
           VALUES ($1, $2, $3, nextval('device_session_epoch'), now() + $4 * interval '1 millisecond', $5)
           ON CONFLICT (workspace_id, device_id) DO NOTHING RETURNING epoch`,
          [ws, dev, node, leaseMs, version ?? null],
        );
        if (r) return { epoch: Number(r['epoch']), previous: null };
        // Another node created the row first (its insert has committed): replace it under its lock.
      }
    },
    async isCurrent(ws, dev, epoch) {
      const [r] = await rows(`SELECT epoch FROM device_sessions WHERE workspace_id = $1 AND device_id = $2 FOR SHARE`, [ws, dev]);
      return r !== undefined && Number(r['epoch']) === epoch;
    },
    async fencedCalls(items) {
      if (!items.length) return [];
      // Two LATERAL reads for every call of the batch (the session FOR SHARE, the call FOR UPDATE), in one query. The keys are sorted before the
      // joins (a subquery with FOR UPDATE/SHARE is never flattened, so the rows are locked in that order): two
      // batches lock their calls in one order. `k_i` gives each answer back its place in `items`.
      const rs = await rows(
        `SELECT k.k_i, s.epoch AS fence_epoch, c.* FROM
           (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(ws, dev, id, k_i) ORDER BY ws COLLATE "C", id COLLATE "C") k
         LEFT JOIN LATERAL (SELECT epoch FROM device_sessions WHERE workspace_id = k.ws AND device_id = k.dev FOR SHARE) s ON true
         LEFT JOIN LATERAL (SELECT * FROM bridge_calls WHERE workspace_id = k.ws AND call_id = k.id FOR UPDATE) c ON true`,
        [items.map((k) => k.workspace_id), items.map((k) => k.device_id), items.map((k) => k.call_id)],
      );
      const out: FencedCall[] = new Array<FencedCall>(items.length);
      for (const r of rs) {
        const { k_i: at, fence_epoch: fence, ...call } = r;
        const i = Number(at) - 1;
        out[i] = { current: fence !== null && Number(fence) === items[i]!.epoch, ...(call['call_id'] != null ? { call: callOf(call) } : {}) };
      }
      return out;
    },
    async markSent(items) {
      if (!items.length) return [];
      // One statement (its own transaction outside one). Per item, as `fencedCalls` reads it: the session row
      // held (FOR SHARE) while the flag is written, and the call's row locked (only when the session is the
      // item's) in the order of the sorted keys, so this never waits in a circle with a batch of fenced writes;
      // then one UPDATE for the items whose session is theirs. Outside a transaction its commit does not wait
      // for the WAL flush (`synchronous_commit` off for this statement's transaction only: set_config's
      // is_local ends with it, so the connection's next commit, in the pool, waits again). The marks run beside
      // the invokes and a crash of this node between the two loses them whatever the commit does; an
      // asynchronous commit adds a PostgreSQL crash in the moment before the WAL writer (or any later commit,
      // the calls' outcomes among them) flushes them. Every CTE is referenced by the SELECT, so each runs.
      const async = carry ? '' : `a AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true) AS commit_mode),`;
      const rs = await rows(
        `WITH ${async} f AS MATERIALIZED (SELECT k.k_i, k.ws, k.id, k.epoch, s.epoch AS fence FROM
           (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) WITH ORDINALITY AS u(ws, dev, id, epoch, k_i) ORDER BY ws COLLATE "C", id COLLATE "C") k
         LEFT JOIN LATERAL (SELECT epoch FROM device_sessions WHERE workspace_id = k.ws AND device_id = k.dev FOR SHARE) s ON true
         LEFT JOIN LATERAL (SELECT 1 FROM bridge_calls WHERE workspace_id = k.ws AND call_id = k.id AND s.epoch = k.epoch FOR UPDATE) c ON true),
         u AS (UPDATE bridge_calls SET sent = true FROM f WHERE workspace_id = f.ws AND call_id = f.id AND f.fence = f.epoch AND NOT sent RETURNING f.k_i)
         SELECT f.k_i, f.fence = f.epoch AS current, f.k_i IN (SELECT k_i FROM u) AS written${carry ? '' : ', (SELECT commit_mode FROM a) AS commit_mode'} FROM f`,
        [items.map((k) => k.workspace_id), items.map((k) => k.device_id), items.map((k) => k.call_id), items.map((k) => String(k.epoch))],
      );
      const out = new Array<SentMark>(items.length);
      for (const r of rs) out[Number(r['k_i']) - 1] = r['current'] !== true ? 'refused' : r['written'] === true ? 'written' : 'unchanged';
      return out;
    },
    async session(ws, dev, hold) {
      const [r] = await rows(`${SESSION_SELECT} WHERE workspace_id = $1 AND device_id = $2${hold ? ' FOR SHARE' : ''}`, [ws, dev]);
      return r ? sessionOf(r) : undefined;
    },
    async renewLeases(node, leaseMs) {
      const r = await q.query(`UPDATE device_sessions SET lease_until = now() + $2 * interval '1 millisecond' WHERE node_id = $1`, [node, leaseMs]);
      return r.rowCount ?? 0;
    },
    async releaseSession(ws, dev, epoch) {
      const r = await q.query(`DELETE FROM device_sessions WHERE workspace_id = $1 AND device_id = $2 AND epoch = $3`, [ws, dev, epoch]);
      return r.rowCount === 1;
    },
    async lapsedSessions() {
      return (await rows(`${SESSION_SELECT} WHERE lease_until <= now() ORDER BY workspace_id COLLATE "C", device_id COLLATE "C"`, [])).map(sessionOf);
    },
    async nodeSessions(node) {
      return (await rows(`${SESSION_SELECT} WHERE node_id = $1 ORDER BY workspace_id COLLATE "C", device_id COLLATE "C"`, [node])).map(sessionOf);
    },
    async openCallsOfNode(node) {
      const rs = await rows(
        `SELECT c.* FROM bridge_calls c JOIN device_sessions s ON s.workspace_id = c.workspace_id AND s.device_id = c.device_id
         WHERE c.outcome IS NULL AND s.node_id = $1`,
        [node],
      );
      return rs.map(callOf);
    },
  };
}
