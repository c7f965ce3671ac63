/**
 * A table of JSON-RPC methods served over `JsonRpcPeer` (the local endpoint's `POST /rpc` and `WS /rpc`):
 * the same peer, envelope errors and error mapping as the bridge session, plus an auth gate. Methods that
 * are not marked public need the caller to be authenticated (the local token).
 */
import { WireError } from './errors.js';
import { JsonRpcPeer, type PeerOptions } from './peer.js';
import type { Transport } from './transport.js';

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

interface Entry {
  fn: RpcMethod;
  public: boolean;
}

/** The method table; `open` serves it on one connection. */
export class RpcMethods {
  private readonly methods = new Map<string, Entry>();
  /** Open connections, so that methods added later reach them too. */
  private readonly live = new Map<JsonRpcPeer, { ctx: RpcContext; onError: PeerOptions['onError'] }>();

  /** Adds (or replaces) methods; `public` ones answer without the local token. */
  add(methods: Record<string, RpcMethod>, opts: { public?: boolean } = {}): void {
    for (const [name, fn] of Object.entries(methods)) {
      const entry = { fn, public: opts.public === true };
      this.methods.set(name, entry);
      for (const [peer, c] of this.live) this.bind(peer, c.ctx, name, entry, c.onError);
    }
  }

  /** True when a method of that name exists. */
  has(name: string): boolean {
    return this.methods.has(name);
  }

  /**
   * Serves the table on `transport` for one caller. An unknown method still answers -32601 to anyone; a
   * known one that is not public answers `unauthorized` to a caller without the token. `onClose` runs
   * when the transport closes.
   */
  open(transport: Transport, ctx: RpcContext, opts: Omit<PeerOptions, 'gate'> = {}, onClose?: () => void): JsonRpcPeer {
    const peer = new JsonRpcPeer(transport, {
      ...opts,
      gate: (method) => {
        const entry = this.methods.get(method);
        if (entry && !entry.public && !ctx.authenticated) {
          ctx.onUnauthorized?.();
          throw new WireError('unauthorized', 'This method needs the local token.');
        }
      },
    });
    for (const [name, entry] of this.methods) this.bind(peer, ctx, name, entry, opts.onError);
    this.live.set(peer, { ctx, onError: opts.onError });
    peer.onclose = () => {
      this.live.delete(peer);
      onClose?.();
    };
    return peer;
  }

  private bind(peer: JsonRpcPeer, ctx: RpcContext, name: string, entry: Entry, onError: PeerOptions['onError']): void {
    peer.onRequest(name, (params) => entry.fn(params ?? {}, ctx));
    // A method called as a notification still runs; its answer goes nowhere, a failure to onError.
    peer.onNotification(name, (params) => void entry.fn(params ?? {}, ctx).catch((e: unknown) => onError?.(e, `notification ${name}`)));
  }
}
