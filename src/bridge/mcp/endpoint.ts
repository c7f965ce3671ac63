/**
 * The bridge's MCP endpoints (docs/mcp.md): Streamable HTTP at `/v1/mcp/devices/<device_id>` (one device) and
 * `/v1/mcp` (the workspace), served by the official SDK's `Server` and `StreamableHTTPServerTransport`, which
 * are loaded on the first MCP request (dynamic import), never at bridge start. Everything is scoped to the
 * runtime token's workspace exactly as the HTTP API is; a tools/call goes through the same CallRouter path as
 * `POST /v1/calls`. One MCP session holds one slot of the token's stream cap (StreamLimiter) until it closes.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ListToolsResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../protocol/errors.js';
import { preAcceptOutcome } from '../../protocol/outcomes.js';
import { CALL_ID_PATTERN, MAX_TIME_PARAM_MS, type AttestedRuntime, type Outcome } from '../../protocol/messages.js';
import { decodePathSegment } from '../../protocol/http.js';
import { ijsonViolation } from '../../protocol/ijson.js';
import { coreMessage, strings, type Locale } from '../../i18n/index.js';
import type { Logger } from '../../base/logger.js';
import { bearer, type RuntimeAuthenticator } from '../auth.js';
import type { CallEvent } from '../calls.js';
import type { CallService } from '../call-lifecycle.js';
import type { DeviceHub } from '../device-hub.js';
import { HttpError, readJson, sendError, STORE_RETRY_AFTER_S, type RateLimit, type StreamLimiter } from '../http-util.js';
import type { BridgeStore, DeviceRecord, StoredCall } from '../store.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpSessionRecord, McpSessionStore } from './session-store.js';
import { BoundedEventStore } from './event-store.js';
import { BridgeTransport, RequestEnd } from './transport.js';
import { deviceLabel, deviceToolName, functionOfDeviceTool, functionOfWorkspaceTool, isLeftOut, toolFor, workspaceToolName, type McpTool } from './tools.js';

/** The `_meta` keys a tools/call may carry and its result carries (docs/mcp.md). */
export const META = {
  callId: 'org.aios/call_id',
  timeoutMs: 'org.aios/timeout_ms',
  confirmTimeoutMs: 'org.aios/confirm_timeout_ms',
  outcome: 'org.aios/outcome',
} as const;

export interface McpOptions {
  session_ttl_s?: number;
  allowed_origins?: string[];
  resume_ttl_s?: number;
  resume_max_bytes?: number;
  heartbeat_s?: number;
}

/** The devices an MCP session sees: the single process's store and hub, or a cluster node's PostgreSQL. */
export interface McpDirectory {
  getDevice(workspaceId: string, deviceId: string): Promise<DeviceRecord | undefined>;
  devices(workspaceId: string): Promise<DeviceRecord[]>;
  /** Whether the device has a live session (on this bridge, or on any node of the cluster). */
  isOnline(workspaceId: string, deviceId: string): Promise<boolean>;
  /** The workspace's device handles, assigning one to each device of `assign` that has none (BridgeStore.mcpHandles). */
  mcpHandles(workspaceId: string, assign?: readonly string[]): Promise<Map<string, string>>;
}

/** The single process's directory. */
export function localMcpDirectory(store: BridgeStore, hub: DeviceHub): McpDirectory {
  return {
    getDevice: async (ws, id) => store.getDevice(ws, id),
    devices: async (ws) => store.devices(ws),
    isOnline: async (ws, id) => hub.isOnline(id, ws),
    mcpHandles: async (ws, assign) => store.mcpHandles(ws, assign),
  };
}

export interface McpEndpointOptions {
  directory: McpDirectory;
  /** The call path `POST /v1/calls` uses: the single process's CallRouter or a cluster node's ClusterCallRouter. */
  router: CallService;
  auth: RuntimeAuthenticator;
  /** The per-token request bucket the runtime API uses. */
  limiter: RateLimit;
  /**
   * Where sessions and their events are kept beyond this process (a cluster node's PostgreSQL); without one,
   * or with one that is not shared, only in this process's memory.
   */
  sessions?: McpSessionStore;
  /** The per-token cap on open streams, shared with SSE and `wait` requests. */
  streams: StreamLimiter;
  maxBodyBytes: number;
  config: McpOptions;
  /** The `Host` values the bridge answers to (its listen address and public_url). */
  allowedHosts: () => ReadonlySet<string>;
  log: Logger;
  locale: Locale;
}

type Sdk = {
  Server: typeof import('@modelcontextprotocol/sdk/server/index.js').Server;
  Transport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
  types: typeof import('@modelcontextprotocol/sdk/types.js');
  Protocol: typeof import('@modelcontextprotocol/sdk/shared/protocol.js').Protocol;
};

/** One MCP session: its SDK objects, whose it is, and what it is bound to. */
interface Session {
  id?: string;
  server: McpServer;
  transport: BridgeTransport;
  token: string;
  workspace: string;
  runtime: AttestedRuntime | undefined;
  /** The device of a per-device endpoint; undefined for the workspace endpoint. */
  device: string | undefined;
  release: () => void;
  /** HTTP requests of this session being served now (a session never expires while one is open). */
  inflight: number;
  idle: NodeJS.Timeout | undefined;
  /** Set when the bridge closes the session (DELETE, idle, stop): in-flight calls are then not cancelled. */
  closing: boolean;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
/** What a tools/call needs of the request it serves: how its wait ends early, and (with a progressToken) how to send progress. */
interface CallContext {
  end: RequestEnd;
  notify?: (n: ServerNotification) => Promise<void>;
}
type CallToolParams = { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> };

/** A refusal before the SDK sees the request (403 Host/Origin, 503 stopping). */
class Refused extends Error {
  constructor(readonly status: number, readonly type: string, message: string) {
    super(message);
  }
}

const DEFAULT_SESSION_TTL_S = 1800;
const DEFAULT_RESUME_TTL_S = 600;
const DEFAULT_RESUME_MAX_BYTES = 1024 * 1024;
const DEFAULT_HEARTBEAT_S = 10;
/** A request without a progressToken answered within this long gets a JSON body, later an SSE stream (docs/mcp.md). */
export const JSON_WITHIN_MS = 500;
const CALL_ID_RE = new RegExp(CALL_ID_PATTERN);
/** How often a node following another node's stream (a resume on a cluster) reads its new events. */
const REMOTE_POLL_MS = 250;

/** Serves `/v1/mcp` and `/v1/mcp/devices/<id>`; returns false for other paths. */
export class McpEndpoint {
  private sdk: Promise<Sdk> | undefined;
  private readonly sessions = new Map<string, Session>();
  /** Left-out functions already logged (once each). */
  private readonly loggedLeftOut = new Set<string>();
  private closed = false;

  constructor(private readonly o: McpEndpointOptions) {}

  /** The SDK, imported on the first MCP request. */
  private loadSdk(): Promise<Sdk> {
    this.sdk ??= Promise.all([
      import('@modelcontextprotocol/sdk/server/index.js'),
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
      import('@modelcontextprotocol/sdk/shared/protocol.js'),
    ]).then(([s, t, types, p]) => ({ Server: s.Server, Transport: t.StreamableHTTPServerTransport, types, Protocol: p.Protocol }));
    return this.sdk;
  }

  /** Open sessions (for tests and the log). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const path = url.pathname;
    if (path !== '/v1/mcp' && !path.startsWith('/v1/mcp/')) return false;
    try {
      await this.serve(req, res, path);
    } catch (e) {
      if (res.headersSent) res.end();
      else if (e instanceof Refused) sendError(res, e.status, e.type, e.message);
      else if (e instanceof WireError && e.type === 'store_unavailable') sendError(res, 503, e.type, e.message, undefined, { 'Retry-After': String(STORE_RETRY_AFTER_S) });
      else if (e instanceof HttpError) sendError(res, e.status, e.type, e.message, e.details, e.type === 'unauthorized' ? { 'WWW-Authenticate': 'Bearer' } : e.type === 'rate_limited' ? { 'Retry-After': String(Math.ceil(Number(e.details?.['retry_after_ms'] ?? 1000) / 1000)) } : {});
      else {
        this.o.log.error({ err: String(e), path }, 'MCP request failed');
        sendError(res, 500, 'execution_failed', 'The bridge failed to serve the MCP request.');
      }
    }
    return true;
  }

  private async serve(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const parts = path.split('/').filter(Boolean).map(decodePathSegment);
    const perDevice = parts.length === 4 && parts[2] === 'devices' && parts[3] !== undefined;
    if (!(parts.length === 2 || perDevice)) throw new HttpError(404, 'not_found', 'No such MCP endpoint: use /v1/mcp or /v1/mcp/devices/<device_id>.');
    // DNS rebinding: the bridge's own checks, before the token (docs/mcp.md "Origins").
    const host = req.headers.host;
    if (!host || !this.o.allowedHosts().has(host.toLowerCase())) throw new Refused(403, 'forbidden', 'The Host header names no address this bridge listens on.');
    const origin = req.headers.origin;
    if (origin !== undefined && !(this.o.config.allowed_origins ?? []).includes(origin)) throw new Refused(403, 'forbidden', 'Requests from this Origin are refused (mcp.allowed_origins).');
    const token = bearer(req.headers.authorization);
    const scope = token ? this.o.auth.authenticateRuntime(token) : null;
    if (!scope) throw new HttpError(401, 'unauthorized', 'A valid runtime token is required.');
    const took = this.o.limiter.take(token!);
    const wait = typeof took === 'number' ? took : await took;
    if (wait > 0) throw new HttpError(429, 'rate_limited', 'Too many requests; slow down.', { retry_after_ms: wait });
    const ws = scope.workspace_id;
    const deviceId = perDevice ? parts[3]! : undefined;
    // An unknown device, or another workspace's, is 404 before any session.
    if (deviceId !== undefined && !(await this.o.directory.getDevice(ws, deviceId))) throw new HttpError(404, 'not_found', 'No such device in this workspace.');
    const method = req.method ?? 'GET';
    const sid = req.headers['mcp-session-id'];
    const body = method === 'POST' ? await readJson(req, this.o.maxBodyBytes) : undefined;
    const shared = this.o.sessions?.shared ? this.o.sessions : undefined;
    const noSession = () => new HttpError(404, 'not_found', 'No such MCP session (it expired or was closed): initialize a new one.');
    if (typeof sid === 'string') {
      let s = this.sessions.get(sid);
      if (shared) {
        // The cluster's record decides (another node may have closed it); it lives session_ttl_s past this request.
        const r = await shared.renew(sid, this.sessionTtlS());
        if (!r || r.token_digest !== digestOf(token!) || (r.device_id ?? undefined) !== deviceId) {
          if (s) void this.closeSession(s);
          throw noSession();
        }
        if (method === 'DELETE') await shared.remove(sid);
        // Begun on another node (or forgotten here): continued here.
        if (!s) s = this.adopt(await this.loadSdk(), r, token!, scope.runtime);
      }
      // A session lives on the path and token it began with; anything else has no such session (404: re-initialize).
      if (!s || s.token !== token || s.device !== deviceId) throw noSession();
      if (method === 'DELETE') s.closing = true;
      return this.pass(s, req, res, body);
    }
    const sdk = await this.loadSdk();
    if (method !== 'POST' || !sdk.types.isInitializeRequest(body)) {
      res.writeHead(400, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: no valid Mcp-Session-Id; send initialize first.' }, id: null }));
      return;
    }
    if (this.closed) throw new Refused(503, 'not_ready', 'The bridge is stopping.');
    const release = this.o.streams.tryAcquire(token!);
    if (!release) throw new HttpError(429, 'rate_limited', `This runtime token already holds ${this.o.streams.limit} open streams and MCP sessions.`, { limit: this.o.streams.limit });
    const id = randomUUID();
    if (shared) {
      const p = (body as { params?: { clientInfo?: unknown; capabilities?: unknown; protocolVersion?: unknown } }).params ?? {};
      const client = { info: p.clientInfo, capabilities: p.capabilities, ...(typeof p.protocolVersion === 'string' ? { protocol_version: p.protocolVersion } : {}) };
      try {
        await shared.save({ session_id: id, token_digest: digestOf(token!), workspace_id: ws, device_id: deviceId ?? null, client }, this.sessionTtlS());
      } catch (e) {
        release();
        throw e;
      }
    }
    const s = this.open(sdk, token!, ws, scope.runtime, deviceId, release, id);
    await this.pass(s, req, res, body);
    if (!s.id) {
      // initialize failed: no session to keep
      void this.closeSession(s);
      if (shared) void shared.remove(id).catch(() => undefined);
    }
  }

  private sessionTtlS(): number {
    return this.o.config.session_ttl_s ?? DEFAULT_SESSION_TTL_S;
  }

  /**
   * A session another node began (its record in the shared store) continued on this one: new SDK objects, set
   * up as that node's were after initialize. The SDK has no public way to do that: its transport's session id
   * and initialized flag and its server's client info are set here (checked by test/bridge/cluster-mcp.test.ts).
   */
  private adopt(sdk: Sdk, r: McpSessionRecord, token: string, runtime: AttestedRuntime | undefined): Session {
    const release = this.o.streams.tryAcquire(token);
    if (!release) throw new HttpError(429, 'rate_limited', `This runtime token already holds ${this.o.streams.limit} open streams and MCP sessions.`, { limit: this.o.streams.limit });
    const s = this.open(sdk, token, r.workspace_id, runtime, r.device_id ?? undefined, release, r.session_id);
    const web = (s.transport.innerTransport as unknown as { _webStandardTransport: { sessionId?: string; _initialized: boolean } })._webStandardTransport;
    web.sessionId = r.session_id;
    web._initialized = true;
    const server = s.server as unknown as { _clientVersion?: unknown; _clientCapabilities?: unknown };
    server._clientVersion = r.client.info;
    server._clientCapabilities = r.client.capabilities;
    s.id = r.session_id;
    this.sessions.set(r.session_id, s);
    return s;
  }

  /** Hands one HTTP request to the session's transport; the session's idle clock stops meanwhile. */
  private async pass(s: Session, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    s.inflight++;
    clearTimeout(s.idle);
    res.once('close', () => {
      s.inflight--;
      this.arm(s);
    });
    await s.transport.handleRequest(req, res, body);
  }

  /** (Re)starts the session's idle clock when it has no open request. */
  private arm(s: Session): void {
    clearTimeout(s.idle);
    if (s.inflight > 0 || s.closing || !s.id) return;
    s.idle = setTimeout(() => {
      this.o.log.info({ session: s.id }, 'MCP session expired (idle)');
      void this.closeSession(s);
    }, this.sessionTtlS() * 1000);
    s.idle.unref();
  }

  private open(sdk: Sdk, token: string, ws: string, runtime: AttestedRuntime | undefined, deviceId: string | undefined, release: () => void, sessionId: string): Session {
    const c = this.o.config;
    const shared = this.o.sessions?.shared ? this.o.sessions : undefined;
    // On a cluster node, ids this node gives never meet another node's for the same session.
    const tag = shared ? `${randomBytes(4).toString('hex')}.` : undefined;
    const store = new BoundedEventStore({ ttlMs: (c.resume_ttl_s ?? DEFAULT_RESUME_TTL_S) * 1000, maxBytes: c.resume_max_bytes ?? DEFAULT_RESUME_MAX_BYTES, ...(tag ? { tag } : {}) });
    const mirror = shared ? (eventId: string, stream: string, message: Parameters<EventStore['storeEvent']>[1]) => shared.saveEvent(sessionId, eventId, stream, message) : undefined;
    const inner = new sdk.Transport({
      sessionIdGenerator: () => sessionId,
      eventStore: shared && mirror ? sharedEvents(store, shared, sessionId, mirror, (e) => this.o.log.warn({ err: String(e), session: sessionId }, 'could not store an MCP event for the other nodes')) : store,
      onsessioninitialized: (id) => {
        s.id = id;
        this.sessions.set(id, s);
      },
    });
    const transport = new BridgeTransport(inner, { store, jsonWithinMs: JSON_WITHIN_MS, versions: sdk.types.SUPPORTED_PROTOCOL_VERSIONS, ...(mirror && shared ? { mirror, tag, remote: { eventsAfter: (id: string) => shared.eventsAfter(sessionId, id), pollMs: REMOTE_POLL_MS, maxMs: (c.resume_ttl_s ?? DEFAULT_RESUME_TTL_S) * 1000 } } : {}) });
    const server = new sdk.Server({ name: 'aios-bridge', version: '1' }, { capabilities: { tools: { listChanged: true } } });
    const s: Session = { server, transport, token, workspace: ws, runtime, device: deviceId, release, inflight: 0, idle: undefined, closing: false };
    server.setRequestHandler(sdk.types.ListToolsRequestSchema, () => this.listTools(s));
    // Registered with the loose base params (a malformed call must be -32602 from checkCallParams, not -32603
    // from a failed parse), and on the Protocol rather than through Server.setRequestHandler: the Server wraps a
    // tools/call handler to parse each request again with the strict schema and each result (the whole outcome)
    // with zod, a copy of it per call. checkCallParams checks what that parse checked; the results are built to
    // CallToolResult by successResult and errorResult.
    const CallTool = sdk.types.CallToolRequestSchema.extend({ params: sdk.types.RequestSchema.shape.params });
    sdk.Protocol.prototype.setRequestHandler.call(server, CallTool, (r, extra) => this.callTool(sdk, s, (r.params ?? {}) as CallToolParams, contextOf(extra as Extra)));
    // A tools/call the bridge's transport serves as JSON skips the Protocol (transport.ts says what it does instead).
    // Only plain ones (name, arguments, _meta): anything else, e.g. a task-augmented call, is the Protocol's to refuse.
    transport.direct = (m, end) => (m.method === 'tools/call' && isPlainCall(m.params) ? this.callTool(sdk, s, (m.params ?? {}) as CallToolParams, { end }) : undefined);
    server.onerror = (e) => this.o.log.debug({ err: String(e), session: s.id }, 'MCP session error');
    transport.onclose = () => {
      s.closing = true;
      this.forget(s);
    };
    void server.connect(transport);
    return s;
  }

  private forget(s: Session): void {
    clearTimeout(s.idle);
    if (s.id && this.sessions.get(s.id) === s) this.sessions.delete(s.id);
    s.release();
  }

  private async closeSession(s: Session): Promise<void> {
    s.closing = true;
    this.forget(s);
    await s.server.close().catch(() => undefined);
  }

  /**
   * Tells every session that can see these devices of the workspace (one, several, or all when not given) that
   * its tool list changed: once per session.
   */
  notifyChanged(workspaceId: string, devices?: string | readonly string[]): void {
    const some = typeof devices === 'string' ? [devices] : devices;
    for (const s of this.sessions.values()) {
      if (s.workspace !== workspaceId) continue;
      if (s.device !== undefined && some !== undefined && !some.includes(s.device)) continue;
      s.server.sendToolListChanged().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.sessions.values()].map((s) => this.closeSession(s)));
  }

  // --- tools/list --------------------------------------------------------------------------------

  private async listTools(s: Session): Promise<ListToolsResult> {
    const tools: McpTool[] = [];
    const add = (d: DeviceRecord, name: (fn: string) => string, offline: boolean) => {
      for (const f of d.functions) {
        const t = toolFor(d, f, name(f.id), offline, this.o.locale);
        if (!isLeftOut(t)) tools.push(t);
        else {
          const key = `${d.workspace_id}/${t.device_id}/${t.function}`;
          if (!this.loggedLeftOut.has(key)) {
            this.loggedLeftOut.add(key);
            this.o.log.warn({ ...t }, 'an MCP tool is left out of the listing');
          }
        }
      }
    };
    if (s.device !== undefined) {
      const d = await this.o.directory.getDevice(s.workspace, s.device);
      if (d) add(d, deviceToolName, !(await this.o.directory.isOnline(d.workspace_id, d.device_id)));
    } else {
      const all = await this.o.directory.devices(s.workspace);
      const up = await Promise.all(all.map((d) => this.o.directory.isOnline(d.workspace_id, d.device_id)));
      const online = all.filter((_, i) => up[i]);
      const handles = await this.o.directory.mcpHandles(s.workspace, online.map((d) => d.device_id));
      for (const d of online) add(d, (fn) => workspaceToolName(handles.get(d.device_id)!, fn), false);
    }
    return { tools: tools as ListToolsResult['tools'] };
  }

  // --- tools/call --------------------------------------------------------------------------------

  /** The device and function a tool name stands for in this session, or undefined (unknown tool). */
  private async resolve(s: Session, name: string): Promise<{ device: DeviceRecord; functionId: string } | undefined> {
    let deviceId: string | undefined;
    let functionId: string | undefined;
    if (s.device !== undefined) {
      deviceId = s.device;
      functionId = functionOfDeviceTool(name);
    } else {
      const w = functionOfWorkspaceTool(name);
      if (!w) return undefined;
      const handles = await this.o.directory.mcpHandles(s.workspace);
      deviceId = [...handles].find(([, h]) => h === w.handle)?.[0];
      functionId = w.functionId;
    }
    if (deviceId === undefined || functionId === undefined) return undefined;
    const device = await this.o.directory.getDevice(s.workspace, deviceId);
    if (!device?.functions.some((f) => f.id === functionId)) return undefined;
    return { device, functionId };
  }

  private async callTool(
    sdk: Sdk,
    s: Session,
    p: CallToolParams,
    ctx: CallContext,
  ): Promise<CallToolResult> {
    const { McpError, ErrorCode } = sdk.types;
    checkCallParams(p, (m) => new McpError(ErrorCode.InvalidParams, `Invalid tools/call request: ${m}`));
    const target = await this.resolve(s, p.name);
    if (!target) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${p.name}`);
    const meta = p._meta ?? {};
    const callId = meta[META.callId];
    if (callId !== undefined && (typeof callId !== 'string' || !CALL_ID_RE.test(callId))) throw new McpError(ErrorCode.InvalidParams, `_meta["${META.callId}"] must be a string matching ${CALL_ID_PATTERN}.`);
    const ms = (k: string): number | undefined => {
      const v = meta[k];
      if (v === undefined) return undefined;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_TIME_PARAM_MS) throw new McpError(ErrorCode.InvalidParams, `_meta["${k}"] must be an integer from 1 to ${MAX_TIME_PARAM_MS}.`);
      return v;
    };
    const timeoutMs = ms(META.timeoutMs);
    const confirmTimeoutMs = ms(META.confirmTimeoutMs);
    const args = p.arguments ?? {};
    const bad = ijsonViolation(args, '/arguments');
    if (bad) throw new McpError(ErrorCode.InvalidParams, `The arguments are not I-JSON (RFC 7493) or nest too deep: ${bad.pointer} ${bad.message}.`);
    const { device, functionId } = target;
    const client = s.server.getClientVersion();
    let submitted: { call: StoredCall; duplicate: boolean };
    try {
      // The invoke's timeout defaults to the function's own (timeout_ms_default), read by the router.
      submitted = await this.o.router.submit({
          workspace_id: s.workspace,
          device_id: device.device_id,
          function: functionId,
          arguments: args,
          ...(typeof callId === 'string' ? { call_id: callId } : {}),
          ...(timeoutMs !== undefined ? { timeout_ms: timeoutMs } : {}),
          ...(confirmTimeoutMs !== undefined ? { confirm_timeout_ms: confirmTimeoutMs } : {}),
          ...(client?.name ? { requester: { kind: 'agent', name: client.name.slice(0, 200) } } : {}),
          ...(s.runtime ? { runtime: s.runtime } : {}),
      });
    } catch (e) {
      if (e instanceof WireError) return errorResult(preAcceptOutcome(typeof callId === 'string' ? callId : '', functionId, 'rejected', e));
      throw e;
    }
    const { call, duplicate } = submitted;
    const settled = await this.follow(s, call, device, p._meta?.['progressToken'] as string | number | undefined, ctx);
    if (!settled?.outcome) {
      // Cancelled by the client (no response is sent), or the bridge stopped waiting: the record says the rest.
      return errorResult(preAcceptOutcome(call.call_id, functionId, 'failed', new WireError('timeout', 'The bridge stopped waiting for the outcome; read it with GET /v1/calls/<call_id> or a retry with the same org.aios/call_id.', { retryable: true, sideEffects: 'possible' })));
    }
    const outcome: Outcome = duplicate ? { ...settled.outcome, replayed: true } : settled.outcome;
    return outcome.state === 'completed' ? successResult(outcome) : errorResult(outcome);
  }

  /**
   * Waits for the call's outcome. With a progress token, state notes, handler progress and a heartbeat become
   * `notifications/progress` with a strictly increasing `progress`. The client's `notifications/cancelled`
   * (the request's signal) cancels the call (§6.5); a session the bridge closes does not.
   */
  private follow(
    s: Session,
    call: StoredCall,
    device: DeviceRecord,
    progressToken: string | number | undefined,
    ctx: CallContext,
  ): Promise<StoredCall | undefined> {
    const ws = s.workspace;
    const id = call.call_id;
    if (call.outcome) return Promise.resolve(call);
    return new Promise((resolve) => {
      let n = 0;
      // Rendered only for a client that asked for progress (a quick call without a token renders nothing).
      let last = progressToken !== undefined ? this.stateText(call.state, device) : '';
      const send = (message: string | undefined) => {
        if (progressToken === undefined || !ctx.notify) return;
        ctx.notify({ method: 'notifications/progress', params: { progressToken, progress: ++n, ...(message ? { message } : {}) } }).catch(() => undefined);
      };
      const onEvent = (e: CallEvent) => {
        if (e.type === 'state') {
          last = this.stateText(e.data.state, device);
          send(last);
        } else if (e.type === 'progress') {
          const d = e.data;
          send(d.message ?? (d.progress !== undefined ? (d.total ? `${d.progress}/${d.total}` : String(d.progress)) : last));
        }
      };
      const beat = progressToken !== undefined ? setInterval(() => send(last), (this.o.config.heartbeat_s ?? DEFAULT_HEARTBEAT_S) * 1000) : undefined;
      beat?.unref();
      // As long as `POST /v1/calls` with `wait` waits: until the bridge's verdict (deadline, then the cancel's answer).
      const budget = this.o.router.untilVerdict(call);
      const done = (c?: StoredCall) => {
        clearInterval(beat);
        clearTimeout(timer);
        this.o.router.off(`event:${ws}/${id}`, onEvent);
        this.o.router.off(`settled:${ws}/${id}`, done);
        ctx.end.off();
        resolve(c ?? Promise.resolve(this.o.router.get(ws, id)).catch(() => undefined));
      };
      // Ended early: by the client's notifications/cancelled (cancel the call), or by the session's end (do not).
      const onAbort = (byClient: boolean) => {
        if (byClient && !s.closing) {
          this.o.router.cancel(ws, id, 'cancelled by the MCP client').catch((e: unknown) => this.o.log.warn({ call_id: id, err: String(e) }, 'could not cancel a call the MCP client cancelled'));
        }
        done();
      };
      const timer = setTimeout(() => done(), Math.max(budget, 1000));
      if (progressToken !== undefined) this.o.router.on(`event:${ws}/${id}`, onEvent);
      this.o.router.on(`settled:${ws}/${id}`, done);
      ctx.end.on(onAbort);
      if (ctx.end.ended !== undefined) return;
      // It may have finished between submit and now.
      const check = (cur: StoredCall | undefined) => (cur?.outcome ? done(cur) : send(last));
      const cur = this.o.router.get(ws, id);
      if (cur instanceof Promise) cur.then(check, () => undefined);
      else check(cur);
    });
  }

  private stateText(state: string, device: DeviceRecord): string {
    const key = state === 'awaiting_confirmation' ? 'core.mcp.progress_confirming' : state === 'running' ? 'core.mcp.progress_running' : 'core.mcp.progress_sent';
    return strings.render(coreMessage(key, { device: deviceLabel(device) }), this.o.locale);
  }
}

/** SHA-256 of a runtime token (hex), as the shared session store keeps it. */
function digestOf(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * The SDK transport's event store on a cluster node: this session's events here first, then the cluster's (a
 * stream another node served); each event stored in both before the SDK writes it.
 */
function sharedEvents(local: BoundedEventStore, shared: McpSessionStore, sessionId: string, mirror: (id: string, stream: string, m: Parameters<EventStore['storeEvent']>[1]) => Promise<void>, failed: (e: unknown) => void): EventStore {
  return {
    storeEvent: async (stream, message) => {
      const id = local.store(stream, message);
      await mirror(id, stream, message).catch(failed);
      return id;
    },
    getStreamIdForEventId: async (id) => local.streamOf(id) ?? (await shared.streamOf(sessionId, id)),
    replayEventsAfter: async (id, { send }) => {
      if (local.streamOf(id) !== undefined) return local.replayEventsAfter(id, { send });
      const r = await shared.eventsAfter(sessionId, id);
      if (!r) throw new Error('unknown or expired event id');
      for (const e of r.events) await send(e.id, e.message);
      return r.stream;
    },
  };
}

/**
 * The context of a tools/call the SDK's Protocol serves: its signal aborts when the client cancels the request
 * or the session closes (the handler tells them apart by `closing`), and it sends progress.
 */
function contextOf(extra: Extra): CallContext {
  const end = new RequestEnd();
  if (extra.signal.aborted) end.end(true);
  else extra.signal.addEventListener('abort', () => end.end(true), { once: true });
  return { end, notify: (n) => extra.sendNotification(n) };
}

function isPlainCall(params: unknown): boolean {
  if (params === undefined) return true;
  for (const k in params as Record<string, unknown>) if (k !== 'name' && k !== 'arguments' && k !== '_meta') return false;
  return true;
}

/** What the SDK's CallToolRequestSchema checks of a tools/call's params (the base params were parsed already). */
function checkCallParams(p: CallToolParams, error: (message: string) => Error): void {
  if (typeof p.name !== 'string') throw error('params.name must be a string.');
  const a = p.arguments;
  if (a !== undefined && (typeof a !== 'object' || a === null || Array.isArray(a))) throw error('params.arguments must be an object.');
  // A task-augmented request never gets here: the Server refuses it (no tasks capability).
}

/** A completed call: the output as `structuredContent`, a text rendering, the whole outcome in `_meta`. */
function successResult(o: Outcome): CallToolResult {
  const out = o.output;
  const structured = out !== null && typeof out === 'object' && !Array.isArray(out) ? (out as Record<string, unknown>) : undefined;
  return {
    content: [{ type: 'text', text: JSON.stringify(out ?? null) }],
    ...(structured ? { structuredContent: structured } : {}),
    _meta: { [META.outcome]: o },
  };
}

/** A refused or failed call: `isError`, the error's message as text, the typed error in the outcome; never `structuredContent`. */
function errorResult(o: Outcome): CallToolResult {
  const message = o.error?.message ?? `The call ended ${o.state}.`;
  return { isError: true, content: [{ type: 'text', text: `${o.error?.type ?? o.state}: ${message}` }], _meta: { [META.outcome]: o } };
}

/** The `Host` values a bridge bound to `boundUrl` (and reachable at `publicUrl`) answers to. */
export function hostsFor(boundUrl: string, publicUrl: string | undefined): Set<string> {
  const out = new Set<string>();
  if (publicUrl) {
    try {
      out.add(new URL(publicUrl).host.toLowerCase());
    } catch {
      // a bad public_url is the config check's business
    }
  }
  if (!boundUrl) return out;
  const u = new URL(boundUrl);
  const port = u.port;
  const h = u.hostname.toLowerCase();
  out.add(u.host.toLowerCase());
  const loopback = h === 'localhost' || h.startsWith('127.') || h === '[::1]';
  const wildcard = h === '0.0.0.0' || h === '[::]';
  if (loopback || wildcard) for (const l of ['localhost', '127.0.0.1', '[::1]']) out.add(`${l}:${port}`);
  if (wildcard) {
    for (const addrs of Object.values(networkInterfaces())) {
      for (const a of addrs ?? []) out.add(`${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${port}`.toLowerCase());
    }
  }
  return out;
}
