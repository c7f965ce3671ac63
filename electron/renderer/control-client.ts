/**
 * The pages' one client of the agent: JSON-RPC 2.0 over the local endpoint's `WS /rpc` (`RpcSocket`, used
 * by the tray page in a browser and by the capture page) and the transports the typed control client
 * (src/control/client.ts, page.ts) calls through (that socket, or the preload's `window.aiosDevice` in the
 * Electron window: transports.ts). Errors come back as plain data with their wire `type` and are revived
 * here (never `instanceof` across a boundary).
 */
import type { Health } from './control-types.js';

/** An error answer from the agent, with its wire type. */
export interface RemoteError extends Error {
  type: string;
  /** A catalogue key of the page's own sentence for it, when a screen chose one. */
  key?: string;
}

/** Revives an error answer (plain data) as an Error with its wire type. */
export function remoteError(e: { type?: string; message?: string; data?: { type?: string } } | undefined): RemoteError {
  return Object.assign(new Error(e?.message ?? 'The agent refused.'), { type: e?.type ?? e?.data?.type ?? 'error' });
}

/** The subprotocol of the local endpoint's `WS /rpc`; the local token travels as a second one. */
const SUBPROTOCOL = 'aios-local.v1';

/** What an `RpcSocket` tells its owner. */
export interface RpcSocketEvents {
  open(): void;
  /** The socket closed (pending calls have been rejected); `opened` says whether it had opened. */
  close(opened: boolean): void;
  /** A notification (a message with a method and no id we wait for). */
  notification(method: string, params: unknown): void;
}

/** One JSON-RPC connection to `WS /rpc` on `origin` (an http(s) origin), authenticated by `token`. */
export class RpcSocket {
  private readonly ws: WebSocket;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private nextId = 1;
  private opened = false;

  constructor(origin: string, token: string, events: RpcSocketEvents) {
    this.ws = new WebSocket(origin.replace(/^http/, 'ws') + '/rpc', [SUBPROTOCOL, 'bearer.' + token]);
    this.ws.onopen = () => {
      this.opened = true;
      events.open();
    };
    this.ws.onmessage = (m: MessageEvent<string>) => {
      let msg: { id?: number; method?: string; params?: unknown; result?: unknown; error?: { message?: string; data?: { type?: string } } };
      try {
        msg = JSON.parse(m.data) as typeof msg;
      } catch {
        return;
      }
      const p = msg.id !== undefined ? this.pending.get(msg.id) : undefined;
      if (p) {
        this.pending.delete(msg.id!);
        if (msg.error) p.reject(remoteError({ type: msg.error.data?.type, message: msg.error.message }));
        else p.resolve(msg.result);
      } else if (msg.method) events.notification(msg.method, msg.params);
    };
    this.ws.onclose = () => {
      for (const p of this.pending.values()) p.reject(remoteError({ type: 'disconnected', message: 'The connection to the agent was lost.' }));
      this.pending.clear();
      events.close(this.opened);
    };
  }

  /** Calls `method`; rejects at once when the socket is not open. */
  call(method: string, params: object = {}): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.ws.readyState !== WebSocket.OPEN) return reject(remoteError({ type: 'disconnected', message: 'Not connected to the agent.' }));
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }
}

/** The connection states a transport reports. */
export type ConnectionState = 'connecting' | 'connected' | 'disconnected';

/** How the tray page reaches the agent (transports.ts): the preload's API, or `WS /rpc` with the local token. */
export interface Transport {
  /** True when the page must hold the local token (a browser), and then also answers prompts itself. */
  readonly needsToken: boolean;
  /** Starts: `onEvent` for each notification, `onState` on each change, `onRefused` when the token is refused. */
  start(onEvent: (method: string, params: unknown) => void, onState: (s: ConnectionState) => void, onRefused: () => void): void;
  /** Sends one control call (its wire name, as the control API's typed client passes it). */
  call(method: string, params: object): Promise<unknown>;
  health(): Promise<Health>;
}
