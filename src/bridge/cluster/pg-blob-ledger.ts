/**
 * Blobs on a cluster (issue 34; docs/deploy.md, "Blobs on a cluster"): the bytes are files in a folder every node
 * mounts (`blobs.dir`, the blob store's own code), their records and each workspace's quota are rows of
 * `bridge_blobs` in PostgreSQL (migration 0010). A blob uploaded through one node is read through any other,
 * and two nodes uploading into one workspace at once cannot pass its quota together: a reservation takes a
 * per-workspace advisory lock, sums the workspace's live rows and adds to its own row in one transaction.
 * An upload under way is a row in state `uploading` whose `expires_at` is a lease this node renews while the
 * upload runs; a node that dies mid-upload leaves a row that stops counting once its lease lapses, and the next
 * sweep (any node's) removes it. Times are PostgreSQL's clock, never a node's.
 */
import type pg from 'pg';
import type { BlobRef } from '../../protocol/messages.js';
import type { BlobLedger, BlobMeta } from '../blob-store.js';
import { pgTransaction, storeError } from '../store/pg-store.js';

/** Options of {@link PgBlobLedger}. */
export interface PgBlobLedgerOptions {
  pool: pg.Pool;
  /** The node writing (kept on each row, for the operator). */
  nodeId: string;
  /** Bytes an upload passes on between reservations (default 1 MiB): one round trip per step. */
  reserveEvery?: number;
  /** How long an upload's reservation lasts without renewal (default 10 min); renewed every third of it. */
  leaseMs?: number;
}

/** The default step between an upload's reservations. */
export const PG_BLOB_RESERVE_EVERY = 1024 * 1024;
const DEFAULT_LEASE_MS = 10 * 60_000;

/** An upload's reservation lapsed (its node could not renew it, e.g. PostgreSQL was away past the lease). */
export class BlobReservationLapsedError extends Error {
  readonly code = 'blob_reservation_lapsed' as const;
  constructor(id: string) {
    super(`the upload ${id} lost its reservation (its lease lapsed); upload it again`);
  }
}

type Row = { blob_id: string; workspace_id: string; size: string; sha256: string; media_type: string; created_ms: string; expires_ms: string; expired: boolean };

const toMeta = (r: Row): BlobMeta => ({
  ref: { blob_id: r.blob_id, sha256: r.sha256, size: Number(r.size), media_type: r.media_type },
  created_ms: Number(r.created_ms),
  expires_ms: Number(r.expires_ms),
  ...(r.workspace_id !== '' ? { scope: r.workspace_id } : {}),
});

const META_COLS = `blob_id, workspace_id, size, sha256, media_type, (extract(epoch from created_at) * 1000)::bigint AS created_ms, (extract(epoch from expires_at) * 1000)::bigint AS expires_ms`;

/** The PostgreSQL {@link BlobLedger} of a cluster node. */
export class PgBlobLedger implements BlobLedger {
  readonly reserveEvery: number;
  private readonly leaseMs: number;
  /** Uploads under way on this node, with their lease renewal. */
  private readonly uploads = new Map<string, NodeJS.Timeout>();

  constructor(private readonly o: PgBlobLedgerOptions) {
    this.reserveEvery = o.reserveEvery ?? PG_BLOB_RESERVE_EVERY;
    this.leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;
  }

  async init(): Promise<void> {}

  private async q<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.o.pool.query<R>(sql, params);
    } catch (e) {
      throw storeError(e);
    }
  }

  async used(scope: string | undefined): Promise<number> {
    const r = await this.q<{ used: string }>(`SELECT coalesce(sum(size), 0) AS used FROM bridge_blobs WHERE workspace_id = $1 AND expires_at > now()`, [scope ?? '']);
    return Number(r.rows[0]!.used);
  }

  async reserve(id: string, scope: string | undefined, bytes: number, quota: number): Promise<boolean> {
    const ws = scope ?? '';
    const first = !this.uploads.has(id);
    const reserved = await pgTransaction(this.o.pool, async (client) => {
      // One reservation per workspace at a time, on every node: the sum below and the write are one step.
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('aios blobs'), hashtext($1))`, [ws]);
      const r = await client.query<{ used: string }>(`SELECT coalesce(sum(size), 0) AS used FROM bridge_blobs WHERE workspace_id = $1 AND expires_at > now()`, [ws]);
      if (Number(r.rows[0]!.used) + bytes > quota) return false;
      const lease = `now() + $3 * interval '1 millisecond'`;
      if (first) {
        await client.query(
          `INSERT INTO bridge_blobs (blob_id, workspace_id, state, size, node_id, created_at, expires_at) VALUES ($1, $2, 'uploading', $4, $5, now(), ${lease})`,
          [id, ws, this.leaseMs, bytes, this.o.nodeId],
        );
      } else {
        const u = await client.query(`UPDATE bridge_blobs SET size = size + $4, expires_at = ${lease} WHERE blob_id = $1 AND workspace_id = $2 AND state = 'uploading' AND expires_at > now()`, [id, ws, this.leaseMs, bytes]);
        if (u.rowCount !== 1) throw new BlobReservationLapsedError(id);
      }
      return true;
    });
    if (!reserved) return false;
    if (first) this.renewWhileRunning(id);
    return true;
  }

  /** Renews an upload's lease every third of it until it is committed or released. */
  private renewWhileRunning(id: string): void {
    const t = setInterval(() => {
      void this.q(`UPDATE bridge_blobs SET expires_at = now() + $2 * interval '1 millisecond' WHERE blob_id = $1 AND state = 'uploading'`, [id, this.leaseMs]).catch(() => undefined);
    }, Math.max(1, Math.floor(this.leaseMs / 3)));
    t.unref();
    this.uploads.set(id, t);
  }

  private done(id: string): void {
    clearInterval(this.uploads.get(id));
    this.uploads.delete(id);
  }

  async release(id: string): Promise<void> {
    this.done(id);
    await this.q(`DELETE FROM bridge_blobs WHERE blob_id = $1 AND state = 'uploading'`, [id]);
  }

  async commit(id: string, scope: string | undefined, ref: BlobRef, _now: number, ttlMs: number): Promise<void> {
    this.done(id);
    // Every byte was reserved before the upload ended: the row's size becomes the blob's (never more than it held).
    const r = await this.q(
      `UPDATE bridge_blobs SET state = 'ready', size = $3, sha256 = $4, media_type = $5, created_at = now(), expires_at = now() + $6 * interval '1 millisecond'
       WHERE blob_id = $1 AND workspace_id = $2 AND state = 'uploading' AND expires_at > now() AND size >= $3`,
      [id, scope ?? '', ref.size, ref.sha256, ref.media_type, ttlMs],
    );
    if (r.rowCount !== 1) throw new BlobReservationLapsedError(id);
  }

  async get(id: string): Promise<(BlobMeta & { expired: boolean }) | null> {
    const r = await this.q<Row>(`SELECT ${META_COLS}, expires_at <= now() AS expired FROM bridge_blobs WHERE blob_id = $1 AND state = 'ready'`, [id]);
    const row = r.rows[0];
    return row ? { ...toMeta(row), expired: row.expired } : null;
  }

  async remove(id: string): Promise<BlobMeta | null> {
    const r = await this.q<Row>(`DELETE FROM bridge_blobs WHERE blob_id = $1 AND state = 'ready' RETURNING ${META_COLS}`, [id]);
    return r.rows[0] ? toMeta(r.rows[0]) : null;
  }

  async expire(): Promise<string[]> {
    // Each row is deleted by one node's sweep; uploads whose lease lapsed (their node died) go too.
    const r = await this.q<{ blob_id: string }>(`DELETE FROM bridge_blobs WHERE expires_at <= now() RETURNING blob_id`, []);
    return r.rows.map((x) => x.blob_id);
  }

  async known(ids: string[]): Promise<Set<string>> {
    const r = await this.q<{ blob_id: string }>(`SELECT blob_id FROM bridge_blobs WHERE blob_id = ANY($1)`, [ids]);
    return new Set(r.rows.map((x) => x.blob_id));
  }

  close(): void {
    for (const t of this.uploads.values()) clearInterval(t);
    this.uploads.clear();
  }
}
