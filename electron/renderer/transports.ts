/**
 * The tray page's two ways to the agent: in the Electron window the preload's typed functions
 * (`window.aiosDevice`, electron/preload.ts), in a plain browser `WS /rpc` on the page's own origin with the
 * local token (from the URL fragment `#token=…` or typed in).
 */
import type { DeviceApi, IpcResult } from '../ipc-channels.js';
import { RpcSocket, remoteError, type Transport } from './control-client.js';
import type { Health } from './control-types.js';
import type { ControlTable } from '../../src/control/api.js';

declare global {
  interface Window {
    /** The preload's API (Electron only). */
    aiosDevice?: DeviceApi;
  }
}

/** Where the page keeps the local token for this tab. */
const TOKEN_KEY = 'aios-local-token';

/** The value of an IPC answer, or its error revived. */
export async function unwrap<T>(p: Promise<IpcResult<T>>): Promise<T> {
  const r = await p;
  if (r && r.ok) return r.value;
  throw remoteError(r?.error);
}

/**
 * Electron: each control method through the preload's function for it (`window.aiosDevice.control`, derived
 * from the same table); one the window is not offered (attaching as the answerer: the tray's main process is
 * the answerer in Electron) is refused here. `table`: the control API's (passed in, so that the capture
 * page, which takes only the token helpers from here, does not bundle it).
 */
export function ipcTransport(api: DeviceApi, table: ControlTable): Transport {
  const keyOf = new Map(Object.entries(table).map(([key, spec]) => [spec.method, key]));
  const fns = api.control as unknown as Record<string, ((params: object) => Promise<IpcResult>) | undefined>;
  return {
    needsToken: false,
    start(onEvent, onState) {
      api.onEvent((e) => onEvent(e.method, e.params));
      onState('connected');
    },
    call(method, params) {
      const fn = fns[keyOf.get(method) ?? ''];
      if (!fn) return Promise.reject(remoteError({ type: 'invalid_request', message: `${method} is not offered in the window.` }));
      return unwrap(fn(params));
    },
    health: () => unwrap(api.health()) as Promise<Health>,
  };
}

/** The agent's `/health` on `origin`. */
async function fetchHealth(origin: string): Promise<Health> {
  const res = await fetch(origin + '/health', { cache: 'no-store', credentials: 'omit' });
  if (!res.ok) throw remoteError({ type: 'unavailable', message: `Health check answered ${res.status}.` });
  return (await res.json()) as Health;
}

/** Browser: JSON-RPC over `WS /rpc` on `origin`, reconnecting with backoff; a token refused before the first open is reported. */
export function wsTransport(origin: string, token: string): Transport {
  let socket: RpcSocket | undefined;
  let retryMs = 500;
  let everOpened = false;
  return {
    needsToken: true,
    start(onEvent, onState, onRefused) {
      const open = (): void => {
        onState('connecting');
        socket = new RpcSocket(origin, token, {
          open() {
            everOpened = true;
            retryMs = 500;
            onState('connected');
          },
          notification: onEvent,
          close(opened) {
            onState('disconnected');
            // Refused before it ever opened while the agent answers /health: the token is wrong.
            if (!opened && !everOpened) {
              fetchHealth(origin).then(
                () => onRefused(),
                () => setTimeout(open, retryMs),
              );
              return;
            }
            setTimeout(open, retryMs);
            retryMs = Math.min(retryMs * 2, 30_000);
          },
        });
      };
      open();
    },
    call(method, params) {
      if (!socket) return Promise.reject(remoteError({ type: 'disconnected', message: 'Not connected to the agent.' }));
      return socket.call(method, params);
    },
    health: () => fetchHealth(origin),
  };
}

/** The local token: from #token=… (then removed from the address bar), else from this tab's storage (under `key`). */
export function takeToken(key = TOKEN_KEY): string | null {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromHash) {
    sessionStorage.setItem(key, fromHash);
    history.replaceState(null, '', location.pathname + location.search);
    return fromHash;
  }
  return sessionStorage.getItem(key);
}

/** Forgets the tab's local token (the agent refused it). */
export const forgetToken = (): void => sessionStorage.removeItem(TOKEN_KEY);
/** Keeps a typed-in local token for this tab. */
export const keepToken = (token: string): void => sessionStorage.setItem(TOKEN_KEY, token);
