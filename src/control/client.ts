/**
 * The typed control client, derived from the control API's table (api.ts): one function per method,
 * `client.listGrants({ kind })`, over any transport that sends a wire name and params (`WS /rpc`, the
 * preload's IPC, a test's in-process table). Callers never spell a method's wire name.
 * A plain module: the window's page bundles it.
 */
import { CONTROL_API, type ControlApi, type ControlTable, type ParamsOf, type ResultOf } from './api.js';

/** Sends one control call: the method's wire name and its params. */
export type ControlCall = (method: string, params: object) => Promise<unknown>;

/** The params argument of method `K`: optional when it has no required field. */
export type ParamsArg<K extends keyof T & string, T extends ControlTable> = Record<string, never> extends ParamsOf<K, T> ? [params?: ParamsOf<K, T>] : [params: ParamsOf<K, T>];

/** One function per method of table `T`. */
export type ControlClient<T extends ControlTable = ControlApi> = { readonly [K in keyof T & string]: (...params: ParamsArg<K, T>) => Promise<ResultOf<K, T>> };

/** Builds the typed client of `table` (the control API by default) over `call`. */
export function controlClient<T extends ControlTable = ControlApi>(call: ControlCall, table: T = CONTROL_API as ControlTable as T): ControlClient<T> {
  const client: Record<string, (params?: object) => Promise<unknown>> = {};
  for (const [key, spec] of Object.entries(table)) client[key] = (params = {}) => call(spec.method, params);
  // Built key by key from the table itself, so the mapped type holds by construction.
  return client as unknown as ControlClient<T>;
}
