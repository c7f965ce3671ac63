/**
 * The Electron IPC side of the control API, derived from its table (api.ts): each method the window may
 * call (`window: true`) has the channel `aios:<wire name>`, and the preload exposes it to the page as
 * `window.aiosDevice.control.<key>(params)`. Params cross unchanged; the agent's method checks them (once,
 * server.ts). A plain module: the preload bundles it.
 */
import { CONTROL_API, type ControlApi, type ControlMethodSpec, type ControlTable, type ResultOf } from './api.js';
import type { ParamsArg } from './client.js';

/** The prefix of every request channel between the tray's window and its main process. */
export const IPC_PREFIX = 'aios:';

/**
 * What every IPC request resolves to. Errors cross the process boundary as plain data with their wire
 * `type` (STYLE.md: never rely on `instanceof` across IPC); the page turns them back into errors.
 */
export type IpcResult<T = unknown> = { ok: true; value: T } | { ok: false; error: { type: string; message: string } };

/** The IPC channel of a control method. */
export const controlChannel = (spec: Pick<ControlMethodSpec, 'method'>): string => IPC_PREFIX + spec.method;

/** The keys of the methods of `table` the window may call. */
export type WindowKey<T extends ControlTable = ControlApi> = { [K in keyof T & string]: T[K]['window'] extends false ? never : K }[keyof T & string];

/** The methods of `table` the window may call: channel → spec. */
export function windowChannels(table: ControlTable = CONTROL_API): Map<string, ControlMethodSpec> {
  return new Map(Object.values(table).filter((s) => s.window).map((s) => [controlChannel(s), s]));
}

/** `window.aiosDevice.control`: one function per method the window may call. */
export type PreloadControlApi<T extends ControlTable = ControlApi> = { readonly [K in WindowKey<T>]: (...params: ParamsArg<K, T>) => Promise<IpcResult<ResultOf<K, T>>> };

/** Builds the preload's control functions over `invoke` (the preload passes `ipcRenderer.invoke`). */
export function preloadControlApi<T extends ControlTable = ControlApi>(invoke: (channel: string, arg: unknown) => Promise<unknown>, table: T = CONTROL_API as ControlTable as T): PreloadControlApi<T> {
  const api: Record<string, (params?: object) => Promise<unknown>> = {};
  for (const [key, spec] of Object.entries(table)) {
    if (spec.window) api[key] = (params = {}) => invoke(controlChannel(spec), params);
  }
  // Built key by key from the table itself, so the mapped type holds by construction.
  return api as unknown as PreloadControlApi<T>;
}
