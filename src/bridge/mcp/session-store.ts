/**
 * Where MCP sessions and their resumability events live beyond one process (docs/mcp.md "On a cluster"). The
 * single process keeps both in its memory (the endpoint's session map and a {@link BoundedEventStore} per
 * session: {@link MemoryMcpSessions} says so); a cluster node keeps them in PostgreSQL too
 * (src/bridge/store/pg-mcp-sessions.ts), so any node continues a session another node began, and replays the
 * events of a stream another node served.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** A session as the store keeps it: whose it is and what its client said at initialize. */
export interface McpSessionRecord {
  session_id: string;
  /** SHA-256 of the runtime token (hex): tokens never land in the store. */
  token_digest: string;
  workspace_id: string;
  /** The device of a per-device endpoint; null for the workspace endpoint. */
  device_id: string | null;
  client: { info?: unknown; capabilities?: unknown; protocol_version?: string };
}

export interface McpSessionStore {
  /** Whether another process may continue this process's sessions (then each request renews the stored row). */
  readonly shared: boolean;
  /** Stores a new session, alive `ttlS` seconds from now. */
  save(r: McpSessionRecord, ttlS: number): Promise<void>;
  /** The session, its life renewed to `ttlS` seconds from now; undefined when it expired, was closed or never was. */
  renew(sessionId: string, ttlS: number): Promise<McpSessionRecord | undefined>;
  /** Ends a session (DELETE): its events go with it. */
  remove(sessionId: string): Promise<void>;
  /** Stores one event of a session's stream (before it is written to the client). */
  saveEvent(sessionId: string, eventId: string, streamId: string, message: JSONRPCMessage): Promise<void>;
  /** The stream an event belongs to, or undefined (unknown or expired). */
  streamOf(sessionId: string, eventId: string): Promise<string | undefined>;
  /** The same stream's events after `eventId` (priming events left out), or undefined for an unknown event. */
  eventsAfter(sessionId: string, eventId: string): Promise<{ stream: string; events: { id: string; message: JSONRPCMessage }[] } | undefined>;
  /** Deletes expired sessions and events older than `resumeTtlS`; resolves with how many rows went. */
  sweep(resumeTtlS: number): Promise<number>;
}

/**
 * The single process's implementation: nothing to share. Its sessions are the endpoint's own objects and
 * their events the per-session BoundedEventStore, so every method here has nothing to add.
 */
export class MemoryMcpSessions implements McpSessionStore {
  readonly shared = false;
  async save(): Promise<void> {}
  async renew(): Promise<undefined> {
    return undefined;
  }
  async remove(): Promise<void> {}
  async saveEvent(): Promise<void> {}
  async streamOf(): Promise<undefined> {
    return undefined;
  }
  async eventsAfter(): Promise<undefined> {
    return undefined;
  }
  async sweep(): Promise<number> {
    return 0;
  }
}
