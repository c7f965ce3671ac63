/**
 * The transport of one MCP session (docs/mcp.md "Responses: JSON or a stream"). It wraps the SDK's
 * StreamableHTTPServerTransport, which serves initialize, the GET stream, DELETE, notifications, batches,
 * anything malformed, and every request that carries a `progressToken` (answered with an SSE stream from the
 * start, as before). A single well-formed request without a `progressToken` is served here, on the Node
 * response itself (no conversion to a web `Request`/`Response` and back, no second parse of the message):
 * - if its response is ready within `jsonWithinMs` and nothing else was sent for it first, the answer is one
 *   `application/json` body (Streamable HTTP lets the server choose per request);
 * - otherwise the response turns into an SSE stream at that moment: a priming event for 2025-11-25 clients,
 *   then each message stored in the session's event store before it is written, so a client that loses the
 *   stream resumes it with `Last-Event-ID` exactly as it resumes the SDK's streams.
 * The transport's methods are synchronous past the SDK's `send` signature (the event store is in memory), so
 * stored and written events keep one order.
 * A request the endpoint's `direct` handler takes (a tools/call served here) skips the SDK's `Protocol` too:
 * no zod checks of the message's kind, no AbortController and handler context per request (measured: about
 * 25–75 µs per request on the bench machine). This transport then does what the Protocol did for it: answer
 * with the result or a JSON-RPC error, and end the handler's wait on `notifications/cancelled` for its id (no
 * answer after that) or when the session ends.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest, MessageExtraInfo, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { BoundedEventStore } from './event-store.js';

/** The SDK's interval between SSE keep-alive comments (sseKeepAlive.js), used for the streams served here too. */
const KEEP_ALIVE_MS = 15_000;
const SSE_HEADERS = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache, no-transform', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' } as const;

export interface BridgeTransportOptions {
  store: BoundedEventStore;
  /** How long a response may take and still be answered as JSON; later, the answer becomes an SSE stream. */
  jsonWithinMs: number;
  /** The protocol versions the SDK accepts in `Mcp-Protocol-Version` (its SUPPORTED_PROTOCOL_VERSIONS). */
  versions: readonly string[];
  /**
   * A cluster node's: stores each event where every node reads it (PostgreSQL) before it is written to the
   * client, so a client that resumes on another node finds every event id it was given. Events are then written
   * one after another, each after its store. A failed store still writes the event (only a resume elsewhere misses it).
   */
  mirror?: (eventId: string, stream: string, message: JSONRPCMessage) => Promise<void>;
  /** Put in this transport's stream ids (a cluster node's own, so they never meet another node's). */
  tag?: string;
  /**
   * A cluster node's: the stored events of a stream another node serves, after an event id (undefined for an
   * unknown id). A `GET` with such a `Last-Event-ID` is replayed from there and then followed, every `pollMs`,
   * until the request's answer is written, the client leaves, or `maxMs` passes.
   */
  remote?: { eventsAfter(eventId: string): Promise<{ stream: string; events: { id: string; message: JSONRPCMessage }[] } | undefined>; pollMs: number; maxMs: number };
}

/**
 * How the wait of a request served directly ends early: the client cancelled it (`notifications/cancelled`,
 * `byClient` true) or the session ended (false). Only the first end counts.
 */
export class RequestEnd {
  /** undefined while running; then whether the client cancelled it. */
  ended: boolean | undefined;
  private cb: ((byClient: boolean) => void) | undefined;

  /** Calls `cb` once when the request ends early (at once if it already has). */
  on(cb: (byClient: boolean) => void): void {
    if (this.ended !== undefined) cb(this.ended);
    else this.cb = cb;
  }

  off(): void {
    this.cb = undefined;
  }

  end(byClient: boolean): void {
    if (this.ended !== undefined) return;
    this.ended = byClient;
    const cb = this.cb;
    this.cb = undefined;
    cb?.(byClient);
  }
}

/** Serves a request without the SDK's Protocol: its result (or a thrown error), or undefined to leave it to the Protocol. */
export type DirectHandler = (request: JSONRPCRequest, end: RequestEnd) => Promise<Record<string, unknown>> | undefined;

/** A request served here, until its response is written (or stored, when its stream is gone). */
interface Pending {
  id: RequestId;
  /** The response to write to; undefined once the client went away (a resume sets a new one). */
  res: ServerResponse | undefined;
  /** Whether the answer became an SSE stream (its events are stored and can be resumed). */
  sse: boolean;
  /** The stream id its events are stored under. */
  stream: string;
  /** The client's protocol version (priming events only for 2025-11-25 and later, as the SDK does). */
  version: string;
  timer: NodeJS.Timeout | undefined;
  keepAlive: NodeJS.Timeout | undefined;
  /** Set when the direct handler serves it. */
  end: RequestEnd | undefined;
}

export class BridgeTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  /** Takes requests served here past the SDK's Protocol (the endpoint sets it). */
  direct: DirectHandler | undefined;
  /** Requests served here, by JSON-RPC id. */
  private readonly pending = new Map<RequestId, Pending>();
  /** The same, by stream id (for `Last-Event-ID`). */
  private readonly byStream = new Map<string, Pending>();
  private seq = 0;
  private ended = false;
  /** With a mirror: the events being stored, then written, in order. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly inner: StreamableHTTPServerTransport, private readonly o: BridgeTransportOptions) {
    inner.onmessage = (m, extra) => {
      if ('method' in m && m.method === 'notifications/cancelled' && !('id' in m)) {
        const id = (m.params as { requestId?: unknown } | undefined)?.requestId;
        if (typeof id === 'string' || typeof id === 'number') this.pending.get(id)?.end?.end(true);
      }
      this.onmessage?.(m, extra);
    };
    inner.onerror = (e) => this.onerror?.(e);
    inner.onclose = () => {
      this.endAll();
      this.onclose?.();
    };
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  /** The SDK's transport this one wraps. */
  get innerTransport(): StreamableHTTPServerTransport {
    return this.inner;
  }

  /** Requests being answered here now (for tests). */
  get servedHere(): number {
    return this.pending.size;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  async close(): Promise<void> {
    this.endAll();
    await this.inner.close();
  }

  async handleRequest(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    if (this.ended) return this.inner.handleRequest(req, res, body);
    if (req.method === 'POST' && this.takes(req, body)) return this.serve(req, res, body);
    if (req.method === 'GET' && this.resume(req, res)) return;
    if (req.method === 'GET' && this.o.remote && (await this.resumeRemote(req, res, this.o.remote))) return;
    return this.inner.handleRequest(req, res, body);
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const final = !('method' in message);
    const id = final ? (message as { id?: RequestId }).id : options?.relatedRequestId;
    const p = id !== undefined ? this.pending.get(id) : undefined;
    if (!p) return this.inner.send(message, options);
    if (!p.sse) {
      if (final) {
        this.forget(p);
        if (p.res && !p.res.headersSent) {
          // With its length: a body written after writeHead without one goes out chunked (chunk framing on both sides).
          const body = JSON.stringify(message);
          p.res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...this.sidHeader() }).end(body);
        }
        return;
      }
      if (!p.res) return; // the client left before any event id was given: nothing can be resumed
      this.toSse(p);
    }
    const eventId = this.o.store.store(p.stream, message);
    if (final) this.forget(p);
    this.ordered(eventId, p.stream, message, () => {
      p.res?.write(`event: message\nid: ${eventId}\ndata: ${JSON.stringify(message)}\n\n`);
      if (final) p.res?.end();
    });
  }

  /** Runs `write` at once, or, with a mirror, after the event (and every earlier one) is stored there. */
  private ordered(eventId: string, stream: string, message: JSONRPCMessage, write: () => void): void {
    const mirror = this.o.mirror;
    if (!mirror) return write();
    this.chain = this.chain.then(() => mirror(eventId, stream, message)).catch((e: unknown) => this.onerror?.(e instanceof Error ? e : new Error(String(e)))).then(write);
  }

  /** Whether this request is served here: one well-formed request, no progressToken, headers as the SDK requires. */
  private takes(req: IncomingMessage, body: unknown): body is JSONRPCRequest {
    if (!this.inner.sessionId || req.headers['mcp-session-id'] !== this.inner.sessionId) return false;
    const accept = req.headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return false;
    if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) return false;
    const v = req.headers['mcp-protocol-version'];
    if (v !== undefined && !this.o.versions.includes(v as string)) return false;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
    const m = body as Record<string, unknown>;
    for (const k in m) if (k !== 'jsonrpc' && k !== 'id' && k !== 'method' && k !== 'params') return false;
    if (m['jsonrpc'] !== '2.0' || typeof m['method'] !== 'string' || m['method'] === 'initialize') return false;
    const id = m['id'];
    if (!(typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id))) || this.pending.has(id)) return false;
    const params = m['params'];
    if (params === undefined) return true;
    if (typeof params !== 'object' || params === null || Array.isArray(params)) return false;
    const meta = (params as Record<string, unknown>)['_meta'];
    if (meta === undefined) return true;
    if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return false;
    // Only the bridge's own keys: a progressToken (or any key the SDK checks) goes the SDK's way.
    for (const k in meta) if (!k.startsWith('org.aios/')) return false;
    return true;
  }

  private serve(req: IncomingMessage, res: ServerResponse, m: JSONRPCRequest): void {
    const v = req.headers['mcp-protocol-version'];
    const p: Pending = { id: m.id, res, sse: false, stream: `${this.inner.sessionId}-r${this.o.tag ?? ''}${++this.seq}`, version: typeof v === 'string' ? v : '', timer: undefined, keepAlive: undefined, end: undefined };
    p.timer = setTimeout(() => this.toSse(p), this.o.jsonWithinMs);
    this.pending.set(p.id, p);
    this.byStream.set(p.stream, p);
    res.once('close', () => this.lost(p, res));
    const end = new RequestEnd();
    const served = this.direct?.(m, end);
    if (!served) return this.onmessage?.(m, { requestInfo: { headers: req.headers, url: new URL(req.url ?? '/', 'http://bridge') } });
    p.end = end;
    // As the Protocol does: nothing is sent for a request that ended early (cancelled, or its session closed).
    const answer = (message: JSONRPCMessage) => (end.ended === undefined ? this.send(message) : undefined);
    served.then(
      (result) => answer({ result, jsonrpc: '2.0', id: m.id } as JSONRPCMessage),
      (e: unknown) => answer(errorResponse(m.id, e)),
    ).catch((e: unknown) => this.onerror?.(e instanceof Error ? e : new Error(String(e))));
  }

  /** The answer becomes an SSE stream: headers, then a priming event that gives the client a Last-Event-ID. */
  private toSse(p: Pending): void {
    clearTimeout(p.timer);
    p.timer = undefined;
    const res = p.res;
    // A client that left before any event id was given can resume nothing: its answer is dropped when it comes.
    if (p.sse || !res) return;
    p.sse = true;
    res.writeHead(200, { ...SSE_HEADERS, ...this.sidHeader() });
    if (p.version >= '2025-11-25') {
      const id = this.o.store.store(p.stream, {} as JSONRPCMessage);
      this.ordered(id, p.stream, {} as JSONRPCMessage, () => res.write(`id: ${id}\ndata: \n\n`));
    } else res.flushHeaders();
    this.keepAlive(p);
  }

  /** GET with a Last-Event-ID of a stream served here whose request is still running: replay, then go on live. */
  private resume(req: IncomingMessage, res: ServerResponse): boolean {
    const last = req.headers['last-event-id'];
    if (typeof last !== 'string' || !req.headers.accept?.includes('text/event-stream') || req.headers['mcp-session-id'] !== this.inner.sessionId) return false;
    const v = req.headers['mcp-protocol-version'];
    if (v !== undefined && !this.o.versions.includes(v as string)) return false;
    const stream = this.o.store.streamOf(last);
    const p = stream !== undefined ? this.byStream.get(stream) : undefined;
    if (!p) return false; // the SDK's streams, finished requests (their events replay from the store), unknown ids
    // The old response may look open still (its client's close not seen yet): the resume takes its place.
    if (p.res) {
      const old = p.res;
      this.lost(p, old);
      old.destroy();
    }
    res.writeHead(200, { ...SSE_HEADERS, ...this.sidHeader() });
    const replay = () => this.o.store.replayAfter(last, (eventId, message) => res.write(`event: message\nid: ${eventId}\ndata: ${JSON.stringify(message)}\n\n`));
    if (!this.o.mirror) {
      replay();
      p.res = res;
    } else {
      // After the events being stored now are written (to no response: the old one is gone), so the replay
      // sends each once; a request that ended meanwhile had its answer replayed, and the stream ends.
      this.chain = this.chain.then(() => {
        replay();
        if (this.byStream.get(p.stream) === p && !res.destroyed) p.res = res;
        else res.end();
      });
    }
    res.once('close', () => this.lost(p, res));
    this.keepAlive(p);
    return true;
  }

  /**
   * GET with a Last-Event-ID of a request stream another node serves (or served): its stored events, then the
   * new ones as that node stores them, until the answer. Other ids are the SDK's (its replay, from the store).
   */
  private async resumeRemote(req: IncomingMessage, res: ServerResponse, remote: NonNullable<BridgeTransportOptions['remote']>): Promise<boolean> {
    const last = req.headers['last-event-id'];
    const sid = this.inner.sessionId;
    if (typeof last !== 'string' || sid === undefined || !req.headers.accept?.includes('text/event-stream') || req.headers['mcp-session-id'] !== sid) return false;
    const v = req.headers['mcp-protocol-version'];
    if (v !== undefined && !this.o.versions.includes(v as string)) return false;
    if (this.o.store.streamOf(last) !== undefined) return false;
    const first = await remote.eventsAfter(last);
    if (!first || !first.stream.startsWith(`${sid}-r`)) return false;
    res.writeHead(200, { ...SSE_HEADERS, ...this.sidHeader() });
    let gone = false;
    res.once('close', () => (gone = true));
    const until = Date.now() + remote.maxMs;
    let beat = Date.now();
    let lastId = last;
    let got = first.events;
    for (;;) {
      for (const e of got) {
        res.write(`event: message\nid: ${e.id}\ndata: ${JSON.stringify(e.message)}\n\n`);
        lastId = e.id;
        // The request's answer ends its stream, as on the node that serves it.
        if ('id' in e.message && ('result' in e.message || 'error' in e.message)) {
          res.end();
          return true;
        }
      }
      if (gone || this.ended || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, remote.pollMs).unref());
      if (gone || this.ended) break;
      if (Date.now() - beat >= KEEP_ALIVE_MS) {
        res.write(': keepalive\n\n');
        beat = Date.now();
      }
      try {
        got = (await remote.eventsAfter(lastId))?.events ?? [];
      } catch {
        break; // the store is out of reach: the client resumes again with its last event id
      }
    }
    if (!res.writableEnded) res.end();
    return true;
  }

  private keepAlive(p: Pending): void {
    clearInterval(p.keepAlive);
    p.keepAlive = setInterval(() => p.res?.write(': keepalive\n\n'), KEEP_ALIVE_MS);
    p.keepAlive.unref();
  }

  /** The client closed this response: events are still stored (if streamed) for a resume. */
  private lost(p: Pending, res: ServerResponse): void {
    if (p.res !== res) return;
    p.res = undefined;
    clearInterval(p.keepAlive);
  }

  private forget(p: Pending): void {
    clearTimeout(p.timer);
    clearInterval(p.keepAlive);
    this.pending.delete(p.id);
    this.byStream.delete(p.stream);
  }

  /** The session ends: every response served here ends too (as the SDK ends its streams). */
  private endAll(): void {
    this.ended = true;
    for (const p of [...this.pending.values()]) {
      this.forget(p);
      p.end?.end(false);
      const res = p.res;
      if (!res || res.writableEnded) continue;
      if (!res.headersSent) res.writeHead(200, { ...SSE_HEADERS, ...this.sidHeader() });
      res.end();
    }
  }

  private sidHeader(): Record<string, string> {
    const sid = this.inner.sessionId;
    return sid !== undefined ? { 'mcp-session-id': sid } : {};
  }
}

/** A handler's error as the SDK's Protocol answers it: its code if it has one (McpError), else -32603. */
function errorResponse(id: RequestId, e: unknown): JSONRPCMessage {
  const x = (e ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  const code = typeof x.code === 'number' && Number.isSafeInteger(x.code) ? x.code : -32603;
  const message = typeof x.message === 'string' ? x.message : 'Internal error';
  return { jsonrpc: '2.0', id, error: { code, message, ...(x.data !== undefined ? { data: x.data } : {}) } } as JSONRPCMessage;
}
