/**
 * The reference bridge's runtime HTTP API (PROTOCOL.md §10): calls, devices, skills discovery.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Type } from '@sinclair/typebox';
import { RpcError, WireError } from '../protocol/errors.js';
import { CALL_ID_PATTERN, MAX_TIME_PARAM_MS, Requester, isTerminal, type AttestedRuntime } from '../protocol/messages.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import { ijsonViolation } from '../protocol/ijson.js';
import { bearer, type RuntimeAuthenticator } from './auth.js';
import type { CallEvent, CallService, SubmitRequest } from './call-lifecycle.js';
import type { DeviceHub } from './device-hub.js';
import { HttpError, readJson, sendError, statusForWireError, STORE_RETRY_AFTER_S, type RateLimit, type StreamLimiter } from './http-util.js';
import { sendJson } from '../base/http-body.js';
import { decodePathSegment } from '../protocol/http.js';
import { isStateEntry, publicRecord, type BridgeStore, type DeviceRecord, type RefusedHello, type StoredCall, type TimelineEntry } from './store.js';

/** What the bridge found when it checked a device's Adapter Card. */
export interface CardCheck {
  /** true: signed by the key pinned at login; false: it is not; null: no pinned key to check against. */
  verified: boolean | null;
  problem?: string;
}

const SubmitSchema = Type.Object(
  {
    workspace_id: Type.String({ minLength: 1 }),
    device_id: Type.String({ minLength: 1 }),
    function: Type.String({ minLength: 1, maxLength: 128 }),
    arguments: Type.Object({}, { additionalProperties: true }),
    call_id: Type.Optional(Type.String({ pattern: CALL_ID_PATTERN })),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TIME_PARAM_MS })),
    confirm_timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TIME_PARAM_MS })),
    wait: Type.Optional(Type.Boolean()),
    wait_timeout_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_TIME_PARAM_MS })),
    descriptor_hash: Type.Optional(Type.String()),
    requester: Type.Optional(Requester),
  },
  { additionalProperties: false },
);

/** What `/v1/devices…` and `/skills` read: the devices, their cards and refused hellos, and which are online. */
export interface DeviceDirectory {
  devices(workspaceId: string): Promise<DeviceRecord[]>;
  getDevice(workspaceId: string, deviceId: string): Promise<DeviceRecord | undefined>;
  adapterCard(workspaceId: string, deviceId: string): Promise<Record<string, unknown> | null>;
  lastRefusedHello(workspaceId: string, deviceId: string): Promise<RefusedHello | undefined>;
  /** The device's live session, if it has one: its protocol version when this bridge holds it (else null). */
  session(workspaceId: string, deviceId: string): Promise<{ protocolVersion: string | null } | undefined>;
  /** The devices of the workspace with a live session. */
  online(workspaceId: string): Promise<ReadonlySet<string>>;
}

/** The single process's directory: its store and its own sessions. */
export function localDirectory(store: BridgeStore, hub: DeviceHub): DeviceDirectory {
  return {
    devices: async (ws) => store.devices(ws),
    getDevice: async (ws, id) => store.getDevice(ws, id),
    adapterCard: async (ws, id) => store.adapterCard(ws, id),
    lastRefusedHello: async (ws, id) => hub.lastRefusedHello(ws, id),
    session: async (ws, id) => {
      const c = hub.get(id, ws);
      return c ? { protocolVersion: c.protocolVersion } : undefined;
    },
    online: async (ws) => new Set(hub.connections().filter((c) => c.identity.workspace_id === ws).map((c) => c.identity.device_id)),
  };
}

export interface RuntimeApiOptions {
  /** What `/v1/devices…` and `/skills` show: the single process's store and sessions, or a cluster node's. */
  devices: DeviceDirectory;
  router: CallService;
  auth: RuntimeAuthenticator;
  limiter: RateLimit;
  /** The per-token cap on open `events` streams and `wait: true` requests; none when absent. */
  streams?: StreamLimiter;
  maxBodyBytes: number;
  publicUrl: () => string;
  /** Checks a device's Adapter Card against the key pinned at its login (BridgeServer.checkCard). */
  cardCheck?: (identity: { workspace_id: string; user_id: string; device_id: string }, card: Record<string, unknown>) => Promise<CardCheck>;
  /** The bridge's `min_client_version`, shown with each device so an outdated one is recognised. */
  minClientVersion?: string;
}

/** Serves `/v1/calls…`, `/v1/devices…` and `/skills`. Returns false for other paths. */
export class RuntimeApi {
  constructor(private readonly o: RuntimeApiOptions) {}

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const path = url.pathname;
    if (!(path.startsWith('/v1/calls') || path.startsWith('/v1/devices') || path === '/skills')) return false;
    try {
      const token = bearer(req.headers.authorization);
      const scope = token ? this.o.auth.authenticateRuntime(token) : null;
      if (!scope) throw new HttpError(401, 'unauthorized', 'A valid runtime token is required.');
      // One process's bucket answers at once; a cluster's shared one asks the database (no await on the hot path).
      const took = this.o.limiter.take(token!);
      const wait = typeof took === 'number' ? took : await took;
      if (wait > 0) throw new HttpError(429, 'rate_limited', 'Too many requests; slow down.', { retry_after_ms: wait });
      await this.route(req, res, url, scope.workspace_id, scope.runtime, token!);
    } catch (e) {
      this.fail(res, e);
    }
    return true;
  }

  private fail(res: ServerResponse, e: unknown): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    if (e instanceof HttpError) {
      const headers: Record<string, string> = {};
      if (e.type === 'rate_limited' && e.details?.['retry_after_ms']) headers['Retry-After'] = String(Math.ceil(Number(e.details['retry_after_ms']) / 1000));
      sendError(res, e.status, e.type, e.message, e.details, headers);
    } else if (e instanceof WireError) {
      // A clustered bridge whose database is out of reach (§10): 503 and when to try again, never a 500.
      const headers: Record<string, string> = e.type === 'store_unavailable' ? { 'Retry-After': String(STORE_RETRY_AFTER_S) } : {};
      sendError(res, e.details?.['last_refused_hello'] ? 409 : statusForWireError(e), e.type, e.message, e.details, headers);
    } else if (e instanceof RpcError && e.code === 404) sendError(res, 404, 'not_found', e.message);
    else sendError(res, 500, 'execution_failed', 'The bridge failed to serve the request.');
  }

  /**
   * Holds one of the token's `runtime_stream_limit` places until `res` closes; 429 `rate_limited` with
   * `Retry-After` when the token holds them all.
   */
  private holdStream(token: string, res: ServerResponse): void {
    if (!this.o.streams) return;
    const release = this.o.streams.tryAcquire(token);
    if (!release) {
      throw new HttpError(429, 'rate_limited', 'This token has too many event streams and waiting requests open; close one or retry later.', { retry_after_ms: 1000, limit: this.o.streams.limit });
    }
    res.once('close', release);
  }

  private async route(req: IncomingMessage, res: ServerResponse, url: URL, ws: string, runtime: AttestedRuntime | undefined, token: string): Promise<void> {
    const parts = url.pathname.split('/').filter(Boolean).map(decodePathSegment);
    if (parts.includes(undefined)) throw new HttpError(404, 'not_found', 'No such resource: a part of the path is not valid percent-encoding.');
    const m = req.method ?? 'GET';
    if (parts[0] === 'skills') return this.skills(res, url, ws);
    if (parts[1] === 'calls') {
      if (parts.length === 2 && m === 'POST') return this.submit(req, res, ws, runtime, token);
      const id = parts[2];
      if (!id) throw new HttpError(405, 'method_not_allowed', 'Use POST /v1/calls.');
      if (parts.length === 3 && m === 'GET') return this.getCall(res, ws, id);
      if (parts[3] === 'cancel' && m === 'POST') return this.cancel(req, res, ws, id);
      if (parts[3] === 'events' && m === 'GET') return this.events(req, res, ws, id, token);
    }
    if (parts[1] === 'devices' && m === 'GET') {
      const dir = this.o.devices;
      if (parts.length === 2) {
        const q = url.searchParams.get('workspace_id');
        if (q && q !== ws) throw new WireError('identity_mismatch', 'This runtime token is scoped to another workspace.');
        const [devices, online] = await Promise.all([dir.devices(ws), dir.online(ws)]);
        return sendJson(res, 200, { devices: devices.map((d) => this.deviceView(d, online.has(d.device_id))) });
      }
      const d = await dir.getDevice(ws, parts[2]!);
      if (!d) {
        // A device whose every hello was refused (e.g. client_outdated) has no record yet, but is not unknown.
        const refused = parts.length === 3 ? await dir.lastRefusedHello(ws, parts[2]!) : undefined;
        if (refused) return sendJson(res, 200, { device_id: parts[2], workspace_id: ws, online: false, client_version: refused.client_version, min_client_version: this.o.minClientVersion ?? null, last_refused_hello: refused, functions: [] });
        throw new HttpError(404, 'not_found', 'No such device in this workspace.');
      }
      if (parts.length === 3) {
        const [session, refused, card] = await Promise.all([dir.session(ws, d.device_id), dir.lastRefusedHello(ws, d.device_id), dir.adapterCard(ws, d.device_id)]);
        const v = this.deviceView(d, session !== undefined, { protocolVersion: session?.protocolVersion ?? null, refused });
        // Checked when asked (this route is not on a call's path), so it needs no state and survives a restart.
        v['adapter_card'] = card;
        const check = card && this.o.cardCheck ? await this.o.cardCheck(d, card) : undefined;
        v['adapter_card_verified'] = check?.verified ?? null;
        if (check?.problem) v['adapter_card_problem'] = check.problem;
        return sendJson(res, 200, v);
      }
      if (parts[3] === 'functions' && parts[4]) {
        const f = d.functions.find((x) => x.id === parts[4]);
        if (!f) throw new HttpError(404, 'not_found', 'No such function on this device.');
        return sendJson(res, 200, f);
      }
    }
    throw new HttpError(404, 'not_found', 'No such route.');
  }

  /** A device as `/v1/devices` shows it; `full` (one device): with its session's protocol version and last refused hello. */
  private deviceView(d: DeviceRecord, online: boolean, full?: { protocolVersion: string | null; refused: RefusedHello | undefined }): Record<string, unknown> {
    const v: Record<string, unknown> = {
      device_id: d.device_id,
      workspace_id: d.workspace_id,
      user_id: d.user_id,
      name: d.name,
      platform: d.platform,
      arch: d.arch,
      client_version: d.client_version,
      online,
      last_seen: online ? new Date().toISOString() : d.last_seen,
      functions_revision: d.functions_revision,
      functions: full ? d.functions : d.functions.map((f) => f.id),
    };
    if (full) {
      v['min_client_version'] = this.o.minClientVersion ?? null;
      v['protocol_version'] = full.protocolVersion;
      v['last_refused_hello'] = full.refused ?? null;
      v['last_closed'] = d.last_closed ?? null;
    }
    return v;
  }

  private async submit(req: IncomingMessage, res: ServerResponse, ws: string, runtime: AttestedRuntime | undefined, token: string): Promise<void> {
    const body = await readJson(req, this.o.maxBodyBytes);
    // Before anything recursive touches it: a lone surrogate or a hostile depth is the runtime's error, never a 500.
    const bad = ijsonViolation(body);
    if (bad) throw new HttpError(400, 'invalid_arguments', 'The request body is not I-JSON (RFC 7493) or nests too deep.', { violations: [bad] });
    const v = schemaValidator.validate(SubmitSchema, body);
    if (v.length) throw new HttpError(400, 'invalid_arguments', 'The request body does not match the calls API.', { violations: v });
    const b = body as SubmitRequest & { wait?: boolean; wait_timeout_ms?: number };
    if (b.workspace_id !== ws) throw new WireError('identity_mismatch', 'This runtime token is scoped to another workspace.');
    // Before the call exists: a refused wait creates nothing.
    if (b.wait) this.holdStream(token, res);
    const { wait: _w, wait_timeout_ms: _t, ...request } = b;
    // The invoke's timeout defaults to the function's own (`timeout_ms_default`), read by the router.
    const { call, duplicate } = await this.o.router.submit({ ...request, ...(runtime ? { runtime } : {}) });
    // A repeated call_id is answered from the record; its outcome says so (replayed: true).
    const answer = (c: typeof call) => {
      const r = publicRecord(c);
      if (duplicate && r.outcome) r.outcome = { ...r.outcome, replayed: true };
      sendJson(res, r.outcome ? 200 : 202, r);
    };
    if (!b.wait) return answer(call);
    const waitMs = b.wait_timeout_ms ?? this.o.router.untilVerdict(call);
    answer((await this.o.router.waitFor(ws, call.call_id, waitMs)) ?? call);
  }

  private async getCall(res: ServerResponse, ws: string, id: string): Promise<void> {
    const c = await this.o.router.get(ws, id);
    if (!c) throw new HttpError(404, 'not_found', 'No such call.');
    sendJson(res, 200, publicRecord(c));
  }

  private async cancel(req: IncomingMessage, res: ServerResponse, ws: string, id: string): Promise<void> {
    const body = await readJson(req, 64 * 1024);
    const reason = body !== null && typeof body === 'object' ? (body as { reason?: unknown }).reason : undefined;
    if (reason !== undefined && (typeof reason !== 'string' || ijsonViolation(reason, '/reason'))) {
      throw new HttpError(400, 'invalid_arguments', 'reason must be a well-formed string.', { violations: [ijsonViolation(reason, '/reason') ?? { pointer: '/reason', message: 'must be a string' }] });
    }
    const c = await this.o.router.cancel(ws, id, reason);
    sendJson(res, 200, publicRecord(c));
  }

  /**
   * SSE (§10): the states and session events the bridge has learned (`replay: true`), then live states,
   * progress and session events (`device_offline`, `device_online`), then the terminal state and the outcome.
   * Every event carries `id: <seq>`, and states, progress and session events `seq` in their data too: 0, 1, 2,
   * … strictly increasing over this stream. Derived timeline states are never sent: they would be back-dated
   * events (§6.2). A call the bridge ended `unknown` (§6.4) keeps its stream open until the device's own
   * outcome resolves it: then a `resolved` event and the end (§6.8), or until the resolution window closes
   * (`router.resolvableUntil`, 24 h after the `unknown`): then the end. A resolved call replays up to its
   * `unknown`, then `resolved`.
   */
  private events(req: IncomingMessage, res: ServerResponse, ws: string, id: string, token: string): void | Promise<void> {
    const got = this.o.router.get(ws, id);
    // The stream subscribes in the same turn as the record arrives: it hears every change after that record.
    if (got instanceof Promise) return got.then((c) => this.stream(req, res, ws, id, token, c));
    this.stream(req, res, ws, id, token, got);
  }

  private stream(req: IncomingMessage, res: ServerResponse, ws: string, id: string, token: string, c: StoredCall | undefined): void {
    if (!c) throw new HttpError(404, 'not_found', 'No such call.');
    this.holdStream(token, res);
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    let seq = 0;
    const write = (event: string, data: Record<string, unknown>, numbered: boolean) => {
      const n = seq++;
      res.write(`id: ${n}\nevent: ${event}\ndata: ${JSON.stringify(numbered ? { ...data, seq: n } : data)}\n\n`);
    };
    const replay = (t: TimelineEntry) => {
      if (isStateEntry(t)) write('state', { call_id: id, state: t.state, at: t.at, replay: true }, true);
      else write(t.event, { call_id: id, event: t.event, at: t.at, replay: true }, true);
    };
    const learned = c.timeline.filter((t) => !t.derived);
    if (c.outcome && c.resolved_from) {
      const upTo = learned.findLastIndex((t) => t.state === 'unknown');
      for (const t of learned.slice(0, upTo + 1)) replay(t);
      write('resolved', { call_id: id, state: c.state, outcome: c.outcome, resolved_from: c.resolved_from, at: c.updated_at, replay: true }, true);
      res.end();
      return;
    }
    let live = true;
    if (c.outcome) {
      const last = learned.at(-1);
      const terminal = last && isStateEntry(last) && isTerminal(last.state) ? last : undefined;
      for (const t of terminal ? learned.slice(0, -1) : learned) replay(t);
      write('state', { call_id: id, state: c.outcome.state, at: terminal?.at ?? c.outcome.finished_at ?? c.updated_at, replay: true }, true);
      write('outcome', c.outcome, false);
      if (this.o.router.resolvableUntil(c) === undefined) {
        res.end();
        return;
      }
      live = false;
    } else {
      for (const t of learned) replay(t);
    }
    const key = `event:${ws}/${id}`;
    const onEvent = (e: CallEvent) => {
      if (e.type === 'outcome') {
        if (!live) return;
        live = false;
        write('state', { call_id: id, state: e.data.state, at: e.data.finished_at ?? new Date().toISOString() }, true);
        write('outcome', e.data, false);
        // The bridge's own `unknown` may still be resolved: stay until it is, or until its window closes.
        const until = this.o.router.resolvableUntil(e.call);
        if (until === undefined) cleanup(true);
        else closeAt(until);
      } else if (e.type === 'resolved') {
        write('resolved', { ...e.data }, true);
        cleanup(true);
      } else if (live) write(e.type, { ...e.data }, true);
    };
    const ping = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
    let windowEnd: NodeJS.Timeout | undefined;
    /** Ends the stream when the §6.8 resolution window closes (timers cap at 2^31-1 ms: re-armed until then). */
    const closeAt = (until: number) => {
      clearTimeout(windowEnd);
      const ms = until - Date.now();
      windowEnd = ms <= 0 ? undefined : setTimeout(() => (Date.now() >= until ? cleanup(true) : closeAt(until)), Math.min(ms, 2 ** 31 - 1));
      if (!windowEnd) cleanup(true);
    };
    const cleanup = (end: boolean) => {
      clearInterval(ping);
      clearTimeout(windowEnd);
      this.o.router.off(key, onEvent);
      if (end) res.end();
    };
    this.o.router.on(key, onEvent);
    req.on('close', () => cleanup(false));
    if (!live && c.outcome) {
      const until = this.o.router.resolvableUntil(c);
      if (until !== undefined) closeAt(until);
    }
  }

  private async skills(res: ServerResponse, url: URL, ws: string): Promise<void> {
    const [devices, online] = await Promise.all([this.o.devices.devices(ws), this.o.devices.online(ws)]);
    const type = url.searchParams.get('type');
    const base = this.o.publicUrl();
    const skills = devices.flatMap((d) =>
      d.functions
        .filter((f) => !type || f.capability_type === type)
        .map((f) => ({
          id: `${d.device_id}:${f.id}`,
          name: f.name,
          capability_type: f.capability_type,
          description: f.description,
          descriptor_url: `${base}/v1/devices/${encodeURIComponent(d.device_id)}/functions/${encodeURIComponent(f.id)}`,
          access: f.access,
          version: f.version,
          device_id: d.device_id,
          online: online.has(d.device_id),
        })),
    );
    sendJson(res, 200, { protocol: { version: '1.0.0' }, provider: { name: 'AIOS reference bridge', url: base }, skills });
  }
}
