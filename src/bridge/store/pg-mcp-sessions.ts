/**
 * MCP sessions and their resumability events in PostgreSQL (migration 0011; docs/mcp.md "On a cluster"): any
 * node continues a session another node began, and replays a stream's events another node wrote. A failure to
 * reach the database rejects with `StoreUnavailableError` (503 `store_unavailable`), never a 500.
 */
import type pg from 'pg';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpSessionRecord, McpSessionStore } from '../mcp/session-store.js';
import { pgTransaction, reaching } from './pg-store.js';

/** The PostgreSQL implementation of {@link McpSessionStore}. */
export class PgMcpSessions implements McpSessionStore {
  readonly shared = true;

  constructor(private readonly pool: pg.Pool) {}

  async save(r: McpSessionRecord, ttlS: number): Promise<void> {
    await reaching(this.pool.query(
      `INSERT INTO mcp_sessions (session_id, token_digest, workspace_id, device_id, client, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + $6::float8 * interval '1 second')`,
      [r.session_id, r.token_digest, r.workspace_id, r.device_id, JSON.stringify(r.client), ttlS],
    ));
  }

  async renew(sessionId: string, ttlS: number): Promise<McpSessionRecord | undefined> {
    const q = await reaching(this.pool.query<McpSessionRecord>(
      `UPDATE mcp_sessions SET expires_at = now() + $2::float8 * interval '1 second'
       WHERE session_id = $1 AND expires_at > now()
       RETURNING session_id, token_digest, workspace_id, device_id, client`,
      [sessionId, ttlS],
    ));
    return q.rows[0];
  }

  async remove(sessionId: string): Promise<void> {
    await reaching(this.pool.query(`DELETE FROM mcp_sessions WHERE session_id = $1`, [sessionId]));
  }

  async saveEvent(sessionId: string, eventId: string, streamId: string, message: JSONRPCMessage): Promise<void> {
    // A session deleted meanwhile stores nothing (no row to refer to): its client has nothing to resume.
    await reaching(this.pool.query(
      `INSERT INTO mcp_events (session_id, event_id, stream_id, message)
       SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM mcp_sessions WHERE session_id = $1)
       ON CONFLICT DO NOTHING`,
      [sessionId, eventId, streamId, JSON.stringify(message)],
    ));
  }

  async streamOf(sessionId: string, eventId: string): Promise<string | undefined> {
    const q = await reaching(this.pool.query<{ stream_id: string }>(`SELECT stream_id FROM mcp_events WHERE session_id = $1 AND event_id = $2`, [sessionId, eventId]));
    return q.rows[0]?.stream_id;
  }

  async eventsAfter(sessionId: string, eventId: string): Promise<{ stream: string; events: { id: string; message: JSONRPCMessage }[] } | undefined> {
    const stream = await this.streamOf(sessionId, eventId);
    if (stream === undefined) return undefined;
    const q = await reaching(this.pool.query<{ event_id: string; message: string }>(
      `SELECT e.event_id, e.message FROM mcp_events e
       WHERE e.session_id = $1 AND e.stream_id = $2 AND e.n > (SELECT n FROM mcp_events WHERE session_id = $1 AND event_id = $3)
         AND e.message <> '{}'
       ORDER BY e.n`,
      [sessionId, stream, eventId],
    ));
    return { stream, events: q.rows.map((r) => ({ id: r.event_id, message: JSON.parse(r.message) as JSONRPCMessage })) };
  }

  async sweep(resumeTtlS: number): Promise<number> {
    const s = await reaching(this.pool.query(`DELETE FROM mcp_sessions WHERE expires_at <= now()`));
    const e = await reaching(this.pool.query(`DELETE FROM mcp_events WHERE at < now() - $1::float8 * interval '1 second'`, [resumeTtlS]));
    return (s.rowCount ?? 0) + (e.rowCount ?? 0);
  }

  /**
   * The MCP handles of a workspace's devices (`d<n>`), assigning the next free one to each device of `assign`
   * that has none, as the single process's `BridgeStore.mcpHandles`; one transaction under the workspace's
   * advisory lock, so two nodes never give one handle twice.
   */
  async mcpHandles(workspaceId: string, assign: readonly string[] = []): Promise<Map<string, string>> {
    const read = async (c: pg.Pool | pg.PoolClient) => (await c.query<{ device_id: string; n: number }>(`SELECT device_id, n FROM mcp_handles WHERE workspace_id = $1`, [workspaceId])).rows;
    let rows = await reaching(read(this.pool));
    const out = new Map(rows.map((r) => [r.device_id, `d${r.n}`]));
    if (assign.every((d) => out.has(d))) return out;
    await pgTransaction(this.pool, async (client) => {
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('mcp_handles:' || $1))`, [workspaceId]);
      rows = await read(client);
      for (const r of rows) out.set(r.device_id, `d${r.n}`);
      let next = rows.reduce((m, r) => Math.max(m, r.n), 0);
      for (const d of assign) {
        if (out.has(d)) continue;
        await client.query(`INSERT INTO mcp_handles (workspace_id, device_id, n) VALUES ($1, $2, $3)`, [workspaceId, d, ++next]);
        out.set(d, `d${next}`);
      }
    });
    return out;
  }
}
