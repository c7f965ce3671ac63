/**
 * The device's bridge session (PROTOCOL.md §1, §3, §6.8): connect with the bearer token, hello,
 * serve the bridge's requests, deliver the outbox with `aios/call.report`, reconnect with backoff and
 * full jitter, reconnect at once after sleep/resume or a network change, hold the lease while away.
 */
import WebSocket from 'ws';
import { JsonRpcPeer, PreSerialized } from '../protocol/peer.js';
import { WebSocketTransport, CLOSE } from '../protocol/ws-transport.js';
import { WireError } from '../protocol/errors.js';
import { METHODS, SUBPROTOCOL, coalescesStateNotes, type HelloParams, type HelloResult } from '../protocol/messages.js';
import type { Logger } from '../base/logger.js';
import type { Dispatcher } from './dispatcher.js';
import type { Outbox, OutboxLink } from './outbox.js';

/** Connection state as shown in status and /health. */
export type BridgeStatus = 'connected' | 'connecting' | 'offline';

/** Why the session stopped trying. */
export interface FatalStop {
  type: 'client_outdated' | 'replaced' | 'unauthorized' | 'identity_mismatch' | 'unsupported_protocol_version';
  message: string;
  details?: Record<string, unknown>;
}

export interface SessionOptions {
  /**
   * The bridge's device WebSocket addresses, tried in order (`bridge.urls`, issue 34): an attempt that
   * fails before its session is up moves to the next one; a session that was up and dropped is retried
   * on the same address first (its node may just be restarting). Each attempt waits out the backoff.
   */
  urls: readonly string[];
  /** The current access token. */
  token(): Promise<string>;
  /** Called after the bridge said `unauthorized`; resolve true when a fresh token is available. */
  refreshToken?(): Promise<boolean>;
  hello(): HelloParams;
  dispatcher: Dispatcher;
  /** Delivery of outcomes: told when a session is up or down, reports what waits after each hello. */
  outbox: Outbox;
  log: Logger;
  maxMessageBytes: number;
  /** Extra request methods the bridge may call (registry, function list), each told which connection asks. */
  methods: Record<string, SessionMethod>;
  onStatus?(s: BridgeStatus): void;
  onFatal?(f: FatalStop): void;
  /** Backoff parameters (§1); tests shorten them. */
  backoff?: Backoff;
  /** The jitter's source, [0, 1) (tests pin it). */
  random?: () => number;
}

/** Reconnect backoff parameters (PROTOCOL.md §1). */
export interface Backoff {
  baseMs: number;
  capMs: number;
  /** A session that stays up this long resets the backoff. */
  resetAfterMs: number;
}

/** §1's defaults: 0.5 s base, 30 s cap, reset after 60 s up. */
export const DEFAULT_BACKOFF: Backoff = { baseMs: 500, capMs: 30_000, resetAfterMs: 60_000 };

/** The wait before retry number `attempt` (0 = the first): full jitter under a doubling, capped ceiling. */
export function backoffDelay(attempt: number, b: Backoff, random: () => number = Math.random): number {
  return random() * Math.min(b.capMs, b.baseMs * 2 ** attempt);
}

/** The bridge connection a session method was called on. */
export interface SessionConnection {
  /** Sends a notification on this connection (dropped once it is closed). */
  notify(method: string, params: unknown): void;
  /** Runs `cb` when this connection closes (e.g. to end a subscription made on it). */
  onClose(cb: () => void): void;
}

/** A request method served over the bridge session. */
export type SessionMethod = (params: unknown, conn: SessionConnection) => unknown;

/** One logical session that survives reconnects. */
export class DeviceSession {
  private peer: JsonRpcPeer | undefined;
  private ws: WebSocket | undefined;
  private attempt = 0;
  /** Which of `urls` the next attempt dials. */
  private urlAt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private upTimer: NodeJS.Timeout | undefined;
  private sleepWatch: NodeJS.Timeout | undefined;
  private stopped = true;
  private ready = false;
  private negotiated: string | undefined;
  private sessionId: string | undefined;
  /** The bridge answered 1.1 or later in the current session's hello (decided once, read per note). */
  private coalesce = false;
  private leaseMs = 300_000;
  private _status: BridgeStatus = 'offline';
  /** Counts successful hellos after the first (for metrics). */
  reconnects = 0;
  private everConnected = false;
  fatal: FatalStop | undefined;

  constructor(private readonly o: SessionOptions) {
    if (o.urls.length === 0) throw new TypeError('DeviceSession needs at least one bridge URL');
  }

  /** The bridge address of the current (or next) connection. */
  get url(): string {
    return this.o.urls[this.urlAt]!;
  }

  get status(): BridgeStatus {
    return this._status;
  }

  /** Starts connecting (idempotent). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.fatal = undefined;
    this.watchForSleep();
    this.connect();
  }

  /** Closes the session and stops reconnecting. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.leaseTimer);
    clearTimeout(this.upTimer);
    clearInterval(this.sleepWatch);
    this.peer?.close(CLOSE.goingAway, 'client stopping');
    this.ws?.terminate();
    this.setStatus('offline');
  }

  /** Reconnects now, without waiting out the backoff (resume from sleep, network change). */
  reconnectNow(): void {
    if (this.stopped) return;
    this.attempt = 0;
    if (this.ready && this.peer?.isOpen) {
      // The socket may be a zombie after sleep: probe it, and replace it if it does not answer.
      this.peer.request(METHODS.ping, {}, 3000).catch(() => this.ws?.terminate());
      return;
    }
    clearTimeout(this.retryTimer);
    this.ws?.terminate();
    if (!this.ws) this.connect();
  }

  /**
   * Drops the connection and connects again without waiting out the backoff (the tray's "reconnect",
   * `trial`'s link cut). Calls keep running; their outcomes are reported on the new session (§6.8).
   */
  dropAndReconnect(): void {
    if (this.stopped) return;
    this.attempt = 0;
    if (this.ws) this.ws.terminate();
    else {
      clearTimeout(this.retryTimer);
      void this.connect();
    }
  }

  /** Sends a notification to the bridge if the session is up. */
  notify(method: string, params: unknown): void {
    if (this.ready) this.peer?.notify(method, params);
  }

  /** True when a response sent now reaches the bridge's socket. */
  get isConnected(): boolean {
    return this.ready && !!this.peer?.isOpen;
  }

  /** The protocol version the bridge answered in the current session's hello; undefined without a session. */
  get protocolVersion(): string | undefined {
    return this.negotiated;
  }

  /** True while the session speaks 1.1 or later: state notes are coalesced (§6.2). */
  get coalescesNotes(): boolean {
    return this.ready && this.coalesce;
  }

  private setStatus(s: BridgeStatus): void {
    if (this._status === s) return;
    this._status = s;
    this.o.onStatus?.(s);
  }

  private stopFatally(f: FatalStop): void {
    this.fatal = f;
    this.o.log.error({ type: f.type, ...f.details }, f.message);
    this.stop();
    this.o.onFatal?.(f);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.setStatus('connecting');
    let token: string;
    try {
      token = await this.o.token();
    } catch (e) {
      this.o.log.error({ err: String(e) }, 'no access token available; will retry');
      this.scheduleRetry();
      return;
    }
    if (this.stopped) return;
    const ws = new WebSocket(this.url, SUBPROTOCOL, {
      headers: { Authorization: `Bearer ${token}` },
      maxPayload: this.o.maxMessageBytes,
      handshakeTimeout: 10_000,
    });
    this.ws = ws;
    ws.on('unexpected-response', (_req, res) => {
      const code = res.statusCode ?? 0;
      res.resume();
      ws.terminate();
      if (code === 401) void this.handleUnauthorized();
      else if (code === 426) this.stopFatally({ type: 'client_outdated', message: 'The bridge requires a newer client; update AIOS Device.' });
      else this.o.log.warn({ status: code }, 'bridge refused the connection');
    });
    ws.on('error', (e) => this.o.log.debug({ err: e.message }, 'bridge socket error'));
    let opened = false;
    ws.on('open', () => {
      opened = true;
      void this.onOpen(ws);
    });
    ws.on('close', (code) => {
      if (this.ws === ws) this.ws = undefined;
      // Once open, the peer's close handler owns reconnecting; before that, this is a failed attempt.
      if (!opened) this.afterClose(code);
    });
  }

  private unauthorizedRetries = 0;

  private async handleUnauthorized(): Promise<void> {
    if (this.o.refreshToken && this.unauthorizedRetries < 2) {
      this.unauthorizedRetries++;
      try {
        if (await this.o.refreshToken()) return; // the close handler schedules the reconnect
      } catch (e) {
        this.o.log.warn({ err: String(e) }, 'token refresh failed');
      }
    }
    this.stopFatally({ type: 'unauthorized', message: 'The bridge refused this device\'s token (invalid, expired or revoked); sign in again with `aios-device login`.' });
  }

  private async onOpen(ws: WebSocket): Promise<void> {
    const transport = new WebSocketTransport(ws);
    const peer = new JsonRpcPeer(transport, {
      maxMessageBytes: this.o.maxMessageBytes,
      gate: (m) => {
        if (!this.ready && m !== METHODS.ping) throw new WireError('not_ready', 'The session is not established yet.');
      },
      onError: (e, where) => this.o.log.warn({ err: String(e), where }, 'session fault'),
    });
    this.peer = peer;
    this.ready = false;
    const closers: (() => void)[] = [];
    const conn: SessionConnection = { notify: (m, p) => void peer.notify(m, p), onClose: (cb) => void closers.push(cb) };
    for (const [m, h] of Object.entries(this.o.methods)) peer.onRequest(m, (params) => h(params, conn));
    peer.onRequest(METHODS.ping, () => ({ time: new Date().toISOString() }));
    peer.onRequest(METHODS.invoke, async (params) => {
      const answer = await this.o.dispatcher.answer(params as Parameters<Dispatcher['answer']>[0]);
      const outcome = answer instanceof PreSerialized ? answer.value : answer;
      // The outbox decides whether this response still counts as delivered (its socket may have closed).
      this.o.outbox.answered(outcome, peer.isOpen);
      return answer;
    });
    peer.onRequest(METHODS.cancel, (params) => this.o.dispatcher.cancel(params as Parameters<Dispatcher['cancel']>[0]));
    peer.onRequest(METHODS.callGet, (params) => this.o.dispatcher.get((params as { call_id: string }).call_id));
    peer.onRequest(METHODS.callList, (params) => this.o.dispatcher.list(params as Parameters<Dispatcher['list']>[0]));
    const link: OutboxLink = {
      get isOpen() {
        return peer.isOpen;
      },
      report: (outcomes) => peer.request<{ accepted?: string[] }>(METHODS.callReport, { outcomes }, 30_000),
    };
    peer.onclose = (info) => {
      for (const end of closers.splice(0)) end();
      this.o.outbox.offline(link);
      this.ready = false;
      this.negotiated = undefined;
      if (this.peer === peer) this.peer = undefined;
      this.afterClose(info.code, info.reason);
    };

    const hello = this.o.hello();
    if (this.sessionId) hello.session_id = this.sessionId;
    let res: HelloResult;
    try {
      // Ready as soon as the result arrives: the bridge may send requests right behind it.
      res = await peer.request<HelloResult>(METHODS.hello, hello, 15_000, (r) => {
        this.ready = true;
        this.negotiated = r.protocol_version;
        this.coalesce = coalescesStateNotes(r.protocol_version);
        this.o.outbox.online(link);
      });
    } catch (e) {
      if (e instanceof WireError) {
        if (e.type === 'client_outdated') return this.stopFatally({ type: 'client_outdated', message: outdatedMessage(hello.client.version, e.details), details: e.details ?? {} });
        if (e.type === 'identity_mismatch' || e.type === 'unsupported_protocol_version') return this.stopFatally({ type: e.type, message: e.message, details: e.details ?? {} });
        if (e.type === 'unauthorized') {
          peer.close(CLOSE.normal);
          return void this.handleUnauthorized();
        }
      }
      this.o.log.warn({ err: String(e) }, 'hello failed');
      peer.close(CLOSE.normal, 'hello failed');
      return;
    }
    this.unauthorizedRetries = 0;
    this.sessionId = res.session_id;
    this.leaseMs = res.lease_ms;
    transport.setHeartbeat(res.heartbeat_ms);
    clearTimeout(this.leaseTimer);
    if (this.everConnected) this.reconnects++;
    this.everConnected = true;
    this.setStatus('connected');
    this.o.log.info({ session_id: res.session_id, ...(this.o.urls.length > 1 ? { url: this.url } : {}) }, 'connected to bridge');
    clearTimeout(this.upTimer);
    this.upTimer = setTimeout(() => (this.attempt = 0), (this.o.backoff ?? DEFAULT_BACKOFF).resetAfterMs);
    this.upTimer.unref();
    // What finished while no session was up (or whose response was lost) goes out now (§6.8).
    await this.o.outbox.flush();
  }

  private afterClose(code: number, reason = ''): void {
    const wasReady = this._status === 'connected';
    if (this.stopped) return;
    if (code === CLOSE.replaced) {
      return this.stopFatally({ type: 'replaced', message: 'Another connection for this device replaced this one; this client stops reconnecting.' });
    }
    if (code === CLOSE.revoked) {
      void this.handleUnauthorized();
      return;
    }
    if (code === CLOSE.outdated) {
      return this.stopFatally({ type: 'client_outdated', message: 'The bridge requires a newer client; update AIOS Device.' });
    }
    if (code === CLOSE.limits) {
      // Past a bound of the bridge's (too many functions, descriptors too big, tools_changed too often): the
      // same functions would be refused again at once, so the next attempt waits the longest backoff.
      this.o.log.error({ code, bound: limitsBound(reason) }, 'the bridge closed the session: this device went past one of its per-device bounds (device_limits_exceeded); reconnecting after the longest backoff');
      this.attempt = 30;
    }
    if (wasReady) {
      this.o.log.warn({ code, reason }, 'bridge connection lost; calls keep running');
      this.startLease();
    } else this.nextUrl();
    this.scheduleRetry();
  }

  /** An attempt failed before its session was up: the next one dials the next address, if there is one. */
  private nextUrl(): void {
    if (this.o.urls.length < 2) return;
    this.urlAt = (this.urlAt + 1) % this.o.urls.length;
    this.o.log.info({ url: this.url }, 'trying the next bridge address');
  }

  private startLease(): void {
    clearTimeout(this.leaseTimer);
    this.leaseTimer = setTimeout(() => {
      const n = this.o.dispatcher.expireLease();
      if (n) this.o.log.warn({ cancelled: n }, 'bridge lease expired; cancelled running calls');
    }, this.leaseMs);
    this.leaseTimer.unref();
  }

  private scheduleRetry(): void {
    if (this.stopped) return;
    this.setStatus('connecting');
    clearTimeout(this.retryTimer);
    const delay = backoffDelay(this.attempt, this.o.backoff ?? DEFAULT_BACKOFF, this.o.random);
    this.attempt = Math.min(this.attempt + 1, 30);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }

  /** A timer that fires late by much more than its interval means the machine slept: reconnect now. */
  private watchForSleep(): void {
    clearInterval(this.sleepWatch);
    let last = Date.now();
    this.sleepWatch = setInterval(() => {
      const now = Date.now();
      if (now - last > 15_000) {
        this.o.log.info({ gap_ms: now - last }, 'clock jumped (sleep or suspend); reconnecting now');
        this.reconnectNow();
      }
      last = now;
    }, 5000);
    this.sleepWatch.unref();
  }
}

/** The bound a 4008 close names (its reason is `{ type, code, details: { bound } }`), if it can be read. */
function limitsBound(reason: string): unknown {
  try {
    return (JSON.parse(reason) as { details?: { bound?: unknown } }).details?.bound;
  } catch {
    return undefined;
  }
}

/** The fatal stop's message for `client_outdated`: both versions, this client's and the bridge's minimum (issue 28). */
function outdatedMessage(mine: string, details: Record<string, unknown> | undefined): string {
  const min = details?.['min_client_version'];
  return typeof min === 'string'
    ? `The bridge requires a newer client: this is ${mine}; the bridge needs ${min} or newer. Update AIOS Device.`
    : `The bridge requires a newer client than this one (${mine}); update AIOS Device.`;
}
