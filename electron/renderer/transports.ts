/**
 * The tray page's two ways to the agent: in the Electron window the preload's typed functions
 * (`window.aiosDevice`, electron/preload.ts), in a plain browser `WS /rpc` on the page's own origin with the
 * local token (from the URL fragment `#token=…` or typed in).
 */
import type { DeviceApi, IpcResult } from '../ipc-channels.js';
import { RpcSocket, remoteError, type Transport } from './control-client.js';
import type { ControlMethod, Health } from './control-types.js';

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

type P = Record<string, unknown>;

/** Electron: each control method through the preload's function for it. */
export function ipcTransport(api: DeviceApi): Transport {
  const byMethod: Record<ControlMethod, ((p: P) => Promise<IpcResult>) | undefined> = {
    'control.status': () => api.status(),
    'control.pause': () => api.pause(),
    'control.resume': () => api.resume(),
    'control.prompts.list': () => api.listPrompts(),
    'control.prompts.arguments': (p) => api.promptArguments(p['prompt_id'] as string),
    'control.prompts.answer': (p) => api.answerPrompt(p['prompt_id'] as string, p['answer'] as never, p['scope'] as never),
    // The tray's main process is the answerer in Electron: the page never attaches.
    'control.prompts.attach': undefined,
    'control.prompts.heartbeat': undefined,
    'control.ui.focus': (p) => api.setFocused(p['focused'] as boolean),
    'control.decisions.list': () => api.listDecisions(),
    'control.decisions.revoke': (p) => api.revokeDecision(p['id'] as number),
    'control.activity.list': (p) => api.listActivity(p),
    'control.signin.status': () => api.signinStatus(),
    'control.signin.start': (p) => api.signinStart(p['bridge_url'] as string | undefined),
    'control.signin.cancel': () => api.signinCancel(),
    'control.signout': () => api.signout(),
    'control.grants.list': () => api.listGrants(),
    'control.grants.add': (p) => api.addGrant(p['kind'] as string, p['entry']),
    'control.grants.remove': (p) => api.removeGrant(p['kind'] as string, p['id'] as string),
    'control.grants.candidates': (p) => api.grantCandidates(p['kind'] as string),
    'control.functions.list': () => api.listFunctions(),
    'control.functions.set': (p) => api.setFunction(p['id'] as string, p['enabled'] as boolean),
    'control.settings.get': () => api.getSettings(),
    'control.settings.log_level': (p) => api.setLogLevel(p['level'] as string),
  };
  return {
    needsToken: false,
    start(onEvent, onState) {
      api.onEvent((e) => onEvent(e.method, e.params));
      onState('connected');
    },
    call(method, params) {
      const fn = byMethod[method];
      if (!fn) return Promise.reject(remoteError({ type: 'invalid_request', message: `${method} is not offered in the window.` }));
      return unwrap(fn(params as P));
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
