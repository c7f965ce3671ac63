/**
 * A JSON-RPC 2.0 peer over a Transport: id correlation, per-request timeouts, dispatch, params
 * validation against the wire schemas, and a gate hook (used for `not_ready` before hello).
 * Both the device agent and the bridge build on it.
 */
import { clampTimerMs } from '../base/timers.js';
import { RPC, RpcError, WireError } from './errors.js';
import { PARAMS_SCHEMAS } from './messages.js';
import { schemaValidator } from './schema-validator.js';
import type { CloseInfo, Transport } from './transport.js';

type Id = number | string;
/** Handles one request; returns the result or throws WireError / RpcError. */
export type RequestHandler = (params: unknown, method: string) => unknown | Promise<unknown>;
/** Handles one notification. */
export type NotificationHandler = (params: unknown, method: string) => void;

interface Pending {
  onResult?: ((v: unknown) => void) | undefined;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout | undefined;
  method: string;
}

/** Raised for requests still pending when the connection closes. */
export class ConnectionClosedError extends Error {
  constructor(readonly info: CloseInfo) {
    super(`connection closed (${info.code}${info.reason ? ' ' + info.reason : ''})`);
    this.name = 'ConnectionClosedError';
  }
}

/** Raised when a request gets no response in time. */
export class RequestTimeoutError extends Error {
  constructor(readonly method: string, readonly ms: number) {
    super(`${method} got no response within ${ms} ms`);
    this.name = 'RequestTimeoutError';
  }
}

export interface PeerOptions {
  /** Default per-request timeout (ms); 0 = none. */
  requestTimeoutMs?: number;
  /** Largest message this peer sends; bigger results become payload_too_large errors. */
  maxMessageBytes?: number;
  /** Called before a request or notification is dispatched; throw to refuse (e.g. not_ready). */
  gate?: (method: string) => void;
  /** Called with faults that have no caller to report to (bad frames, handler crashes). */
  onError?: (err: unknown, context: string) => void;
}

/**
 * A result whose JSON text is already made (the dispatcher serializes each outcome once, for its size
 * check and the journal): a request handler may return one, and the response splices `json` in instead
 * of serializing `value` again. `json` must be `JSON.stringify(value)`.
 */
export class PreSerialized<T = unknown> {
  constructor(
    readonly value: T,
    readonly json: string,
  ) {}
}

/** True when `text` is over `max` UTF-8 bytes (counted only when it could be: a character is at most 3 bytes per UTF-16 unit). */
export function tooLong(text: string, max: number | undefined): boolean {
  return max !== undefined && max > 0 && text.length * 3 > max && Buffer.byteLength(text) > max;
}

/** One JSON-RPC endpoint. */
export class JsonRpcPeer {
  private nextId = 1;
  private readonly pending = new Map<Id, Pending>();
  private readonly requestHandlers = new Map<string, RequestHandler>();
  private readonly notificationHandlers = new Map<string, NotificationHandler>();
  private closedInfo: CloseInfo | undefined;
  /** Called once when the transport closes. */
  onclose?: (info: CloseInfo) => void;

  constructor(readonly transport: Transport, private readonly opts: PeerOptions = {}) {
    transport.onmessage = (text) => this.receive(text);
    transport.onclose = (info) => this.handleClose(info);
  }

  get isOpen(): boolean {
    return this.closedInfo === undefined && this.transport.isOpen;
  }

  onRequest(method: string, handler: RequestHandler): void {
    this.requestHandlers.set(method, handler);
  }

  onNotification(method: string, handler: NotificationHandler): void {
    this.notificationHandlers.set(method, handler);
  }

  /**
   * Sends a request and resolves with its result. `onResult` runs synchronously when the result
   * arrives, before any later message is dispatched (the session uses it to mark hello done).
   */
  request<T = unknown>(method: string, params?: unknown, timeoutMs = this.opts.requestTimeoutMs ?? 0, onResult?: (result: T) => void): Promise<T> {
    if (!this.isOpen) return Promise.reject(new ConnectionClosedError(this.closedInfo ?? { code: 1006, reason: 'not open' }));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const p: Pending = { onResult: onResult as ((v: unknown) => void) | undefined, resolve: resolve as (v: unknown) => void, reject, timer: undefined, method };
      if (timeoutMs > 0) {
        p.timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new RequestTimeoutError(method, timeoutMs));
        }, clampTimerMs(timeoutMs));
      }
      this.pending.set(id, p);
      try {
        this.write({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
      } catch (e) {
        this.pending.delete(id);
        if (p.timer) clearTimeout(p.timer);
        reject(e);
      }
    });
  }

  /** Sends a notification (best effort: dropped silently if the transport is closed). */
  notify(method: string, params?: unknown): boolean {
    if (!this.isOpen) return false;
    try {
      // Built as text: a state note goes out per transition of every call (no envelope object, no spread).
      this.writeText(params === undefined ? `{"jsonrpc":"2.0","method":${JSON.stringify(method)}}` : `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${JSON.stringify(params)}}`);
      return true;
    } catch {
      return false;
    }
  }

  close(code?: number, reason?: string): void {
    this.transport.close(code, reason);
  }

  private write(msg: object): void {
    this.writeText(JSON.stringify(msg));
  }

  /** A message whose text is `parts` joined; the transport may send them without joining them. */
  private writeParts(parts: readonly string[]): void {
    const max = this.opts.maxMessageBytes;
    let length = 0;
    for (const p of parts) length += p.length;
    if (max !== undefined && max > 0 && length * 3 > max) {
      let bytes = 0;
      for (const p of parts) bytes += Buffer.byteLength(p);
      if (bytes > max) throw new WireError('payload_too_large', `The message is larger than the ${max}-byte frame limit.`, { details: { limit: max } });
    }
    if (this.transport.sendParts) this.transport.sendParts(parts);
    else this.transport.send(parts.join(''));
  }

  private writeText(text: string): void {
    const max = this.opts.maxMessageBytes;
    if (tooLong(text, max)) {
      throw new WireError('payload_too_large', `The message is larger than the ${max}-byte frame limit.`, { details: { limit: max } });
    }
    this.transport.send(text);
  }

  /** Handles one frame; for a request, the promise settles once its answer is sent. */
  private receive(text: string): Promise<void> | undefined {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      this.sendError(null, RPC.parse_error, 'Parse error: the frame is not valid JSON.');
      return;
    }
    if (Array.isArray(msg)) {
      // Batches are not used by this protocol; refuse them clearly rather than half-supporting them.
      this.sendError(null, RPC.invalid_request, 'Batch requests are not supported.');
      return;
    }
    if (!msg || typeof msg !== 'object' || (msg as { jsonrpc?: unknown }).jsonrpc !== '2.0') {
      this.sendError(idOf(msg), RPC.invalid_request, 'Invalid request: not a JSON-RPC 2.0 object.');
      return;
    }
    const m = msg as { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown };
    if (typeof m.method === 'string') {
      const hasId = 'id' in m && m.id !== undefined;
      if (hasId && !validId(m.id)) {
        this.sendError(null, RPC.invalid_request, 'Invalid request: bad id.');
        return;
      }
      if (hasId) return this.dispatchRequest(m.id as Id, m.method, m.params);
      this.dispatchNotification(m.method, m.params);
      return;
    }
    if ('id' in m && ('result' in m || 'error' in m)) {
      const p = this.pending.get(m.id as Id);
      if (!p) return; // a late answer to a request that already timed out
      this.pending.delete(m.id as Id);
      if (p.timer) clearTimeout(p.timer);
      if ('error' in m && m.error) p.reject(reviveError(m.error));
      else {
        p.onResult?.(m.result);
        p.resolve(m.result);
      }
      return;
    }
    this.sendError(idOf(m), RPC.invalid_request, 'Invalid request: no method, result or error.');
  }

  private checkParams(method: string, params: unknown): void {
    const schema = PARAMS_SCHEMAS[method];
    if (!schema) return;
    const v = schemaValidator.validate(schema, params);
    if (v.length) throw new RpcError(RPC.invalid_params, `Invalid params for ${method}.`, { violations: v });
  }

  private async dispatchRequest(id: Id, method: string, params: unknown): Promise<void> {
    try {
      this.opts.gate?.(method);
      const handler = this.requestHandlers.get(method);
      if (!handler) throw new RpcError(RPC.method_not_found, `Method not found: ${method}.`);
      this.checkParams(method, params);
      const result = await handler(params, method);
      if (!this.isOpen) return;
      try {
        if (result instanceof PreSerialized) this.writeParts([`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`, result.json, '}']);
        else this.write({ jsonrpc: '2.0', id, result: result ?? null });
      } catch (e) {
        if (e instanceof WireError) this.sendRaw(id, e.toRpcError());
        else throw e;
      }
    } catch (e) {
      if (!this.isOpen) return;
      if (e instanceof WireError) this.sendRaw(id, e.toRpcError());
      else if (e instanceof RpcError) this.sendRaw(id, { code: e.code, message: e.message, ...(e.data === undefined ? {} : { data: e.data }) });
      else {
        this.opts.onError?.(e, `handler for ${method}`);
        this.sendError(id, RPC.internal_error, 'Internal error.');
      }
    }
  }

  private dispatchNotification(method: string, params: unknown): void {
    try {
      this.opts.gate?.(method);
      const handler = this.notificationHandlers.get(method);
      if (!handler) return;
      this.checkParams(method, params);
      handler(params, method);
    } catch (e) {
      this.opts.onError?.(e, `notification ${method}`);
    }
  }

  private sendError(id: Id | null, code: number, message: string): void {
    this.sendRaw(id, { code, message });
  }

  private sendRaw(id: Id | null, error: object): void {
    if (!this.isOpen) return;
    try {
      this.transport.send(JSON.stringify({ jsonrpc: '2.0', id, error }));
    } catch (e) {
      this.opts.onError?.(e, 'send error response');
    }
  }

  private handleClose(info: CloseInfo): void {
    if (this.closedInfo) return;
    this.closedInfo = info;
    for (const [id, p] of this.pending) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(new ConnectionClosedError(info));
      this.pending.delete(id);
    }
    this.onclose?.(info);
  }
}

function validId(id: unknown): boolean {
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));
}

function idOf(m: unknown): Id | null {
  const id = m && typeof m === 'object' ? (m as { id?: unknown }).id : undefined;
  return validId(id) ? (id as Id) : null;
}

/** Turns a JSON-RPC error object into WireError (protocol errors) or RpcError (envelope errors). */
export function reviveError(err: unknown): Error {
  const e = (err && typeof err === 'object' ? err : {}) as { code?: unknown; message?: unknown; data?: unknown };
  const w = WireError.fromPlain(e);
  if (w) return w;
  return new RpcError(typeof e.code === 'number' ? e.code : RPC.internal_error, typeof e.message === 'string' ? e.message : 'error', e.data);
}
