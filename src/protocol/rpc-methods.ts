/**
 * Server side of JSON-RPC 2.0 for the local endpoint (`POST /rpc` and `WS /rpc`): method table, auth gate,
 * envelope errors, batches. Methods that are not marked public need the local token.
 */
import { RPC, RpcError, WireError } from './errors.js';

/** What a method learns about the caller. */
export interface RpcContext {
  /** True when the caller presented the local token (or came through the 0600 Unix socket). */
  readonly authenticated: boolean;
  /** Sends a notification back to this caller; absent on plain HTTP, where there is no back channel. */
  readonly notify?: (method: string, params: unknown) => void;
  /** Registers a callback for when this caller's connection ends (WebSocket only). */
  readonly onClose?: (cb: () => void) => void;
  /** Told when a method was refused because the caller is not authenticated (HTTP answers 401 then). */
  readonly onUnauthorized?: () => void;
}

/** One method implementation. */
export type RpcMethod = (params: unknown, ctx: RpcContext) => Promise<unknown>;

type JsonRpcResponse = { jsonrpc: '2.0'; id: string | number | null } & ({ result: unknown } | { error: { code: number; message: string; data?: unknown } });

function errorBody(e: unknown): { code: number; message: string; data?: unknown } {
  if (e instanceof WireError) return e.toRpcError();
  if (e instanceof RpcError) return e.data === undefined ? { code: e.code, message: e.message } : { code: e.code, message: e.message, data: e.data };
  return { code: RPC.internal_error, message: 'Internal error.' };
}

function isId(v: unknown): v is string | number | null {
  return v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/** The method table and dispatcher. */
export class RpcMethods {
  private readonly methods = new Map<string, { fn: RpcMethod; public: boolean }>();

  /** Adds (or replaces) methods; `public` ones answer without the local token. */
  add(methods: Record<string, RpcMethod>, opts: { public?: boolean } = {}): void {
    for (const [name, fn] of Object.entries(methods)) this.methods.set(name, { fn, public: opts.public === true });
  }

  /** True when a method of that name exists. */
  has(name: string): boolean {
    return this.methods.has(name);
  }

  /** Handles one parsed message (object or batch); undefined when nothing is to be sent back. */
  async handle(msg: unknown, ctx: RpcContext): Promise<JsonRpcResponse | JsonRpcResponse[] | undefined> {
    if (Array.isArray(msg)) {
      if (msg.length === 0) return { jsonrpc: '2.0', id: null, error: { code: RPC.invalid_request, message: 'Empty batch.' } };
      const out = (await Promise.all(msg.map((m) => this.handleOne(m, ctx)))).filter((r): r is JsonRpcResponse => r !== undefined);
      return out.length ? out : undefined;
    }
    return this.handleOne(msg, ctx);
  }

  /** Parses and handles one text message; returns the text to send back, if any. */
  async handleText(text: string, ctx: RpcContext): Promise<string | undefined> {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: RPC.parse_error, message: 'Parse error.' } });
    }
    const res = await this.handle(msg, ctx);
    return res === undefined ? undefined : JSON.stringify(res);
  }

  private async handleOne(m: unknown, ctx: RpcContext): Promise<JsonRpcResponse | undefined> {
    const req = m as Record<string, unknown> | null;
    if (!req || typeof req !== 'object' || req['jsonrpc'] !== '2.0' || typeof req['method'] !== 'string' || ('id' in req && !isId(req['id']))) {
      return { jsonrpc: '2.0', id: null, error: { code: RPC.invalid_request, message: 'Invalid request.' } };
    }
    const isNotification = !('id' in req);
    const id = (req['id'] ?? null) as string | number | null;
    const entry = this.methods.get(req['method']);
    let response: JsonRpcResponse;
    if (!entry) {
      response = { jsonrpc: '2.0', id, error: { code: RPC.method_not_found, message: 'Method not found.' } };
    } else if (!entry.public && !ctx.authenticated) {
      ctx.onUnauthorized?.();
      response = { jsonrpc: '2.0', id, error: new WireError('unauthorized', 'This method needs the local token.').toRpcError() };
    } else {
      try {
        const result = await entry.fn(req['params'] ?? {}, ctx);
        response = { jsonrpc: '2.0', id, result: result ?? null };
      } catch (e) {
        response = { jsonrpc: '2.0', id, error: errorBody(e) };
      }
    }
    return isNotification ? undefined : response;
  }
}
