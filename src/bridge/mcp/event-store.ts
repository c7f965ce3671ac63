/**
 * A bounded resumability event store for one MCP session (docs/mcp.md "Resumability"): the SDK ships only
 * an unbounded example. Events older than `ttlMs` and, past `maxBytes`, the oldest events are dropped; a
 * `Last-Event-ID` that names a dropped event is refused by the SDK (400), so a client learns that it lost
 * the stream's tail instead of silently missing a result. Implements the SDK's `EventStore` interface.
 */
import type { EventStore, StreamId, EventId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

interface StoredEvent {
  id: EventId;
  stream: StreamId;
  message: JSONRPCMessage;
  bytes: number;
  at: number;
}

export interface EventStoreLimits {
  ttlMs: number;
  maxBytes: number;
  now?: () => number;
  /** Put in every event id after the stream id (a cluster node's own, so ids never meet another node's). */
  tag?: string;
}

export class BoundedEventStore implements EventStore {
  private readonly events: StoredEvent[] = [];
  private readonly byId = new Map<EventId, StoredEvent>();
  private bytes = 0;
  private seq = 0;
  private readonly now: () => number;

  constructor(private readonly limits: EventStoreLimits) {
    this.now = limits.now ?? Date.now;
  }

  /** Bytes held now (for tests and the log). */
  get size(): number {
    return this.bytes;
  }

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    return this.store(streamId, message);
  }

  /** storeEvent without the promise (the bridge's own transport writes each event right after storing it). */
  store(streamId: StreamId, message: JSONRPCMessage): EventId {
    const id = `${streamId}_${this.limits.tag ?? ''}${++this.seq}`;
    const bytes = Buffer.byteLength(JSON.stringify(message)) + id.length;
    const e: StoredEvent = { id, stream: streamId, message, bytes, at: this.now() };
    this.events.push(e);
    this.byId.set(id, e);
    this.bytes += bytes;
    this.trim();
    return id;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.streamOf(eventId);
  }

  /** The stream an event id belongs to, or undefined (unknown, expired or dropped). */
  streamOf(eventId: EventId): StreamId | undefined {
    this.trim();
    return this.byId.get(eventId)?.stream;
  }

  async replayEventsAfter(lastEventId: EventId, { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> }): Promise<StreamId> {
    const later: StoredEvent[] = [];
    const stream = this.replayAfter(lastEventId, (id, message) => later.push({ id, message } as StoredEvent));
    for (const e of later) await send(e.id, e.message);
    return stream;
  }

  /** The same stream's events after `lastEventId`, synchronously; throws for an unknown or expired id. */
  replayAfter(lastEventId: EventId, send: (eventId: EventId, message: JSONRPCMessage) => void): StreamId {
    this.trim();
    const from = this.byId.get(lastEventId);
    if (!from) throw new Error('unknown or expired event id');
    const i = this.events.indexOf(from);
    // Only the same stream's later events; priming events (empty messages) carry nothing to replay.
    for (const e of this.events.slice(i + 1)) if (e.stream === from.stream && Object.keys(e.message).length) send(e.id, e.message);
    return from.stream;
  }

  /** Drops expired events, then the oldest until the store fits its byte budget. */
  private trim(): void {
    const oldest = this.now() - this.limits.ttlMs;
    let n = 0;
    let bytes = this.bytes;
    while (n < this.events.length && (this.events[n]!.at < oldest || bytes > this.limits.maxBytes)) bytes -= this.events[n++]!.bytes;
    if (!n) return;
    for (const e of this.events.splice(0, n)) this.byId.delete(e.id);
    this.bytes = bytes;
  }
}
