/**
 * The agent's side of the control API: handlers implement the table (api.ts) by key, and `serveControl`
 * turns them into the JSON-RPC methods the local endpoint serves (`POST /rpc`, `WS /rpc`) and the tray's
 * IPC calls in-process. Here, and only here, are params checked against the table's schema and the local
 * token required; a handler receives params of its schema's type.
 */
import type { Static } from '@sinclair/typebox';
import { RPC, RpcError, WireError } from '../protocol/errors.js';
import type { RpcContext, RpcMethod } from '../protocol/rpc-methods.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import { CONTROL_API, type ControlApi, type ControlMethodSpec, type ControlTable } from './api.js';

/** Per-request context from the local endpoint (or the tray's IPC). */
export type ControlContext = RpcContext;

/** A handler of `S`: typed params in, its result out. */
export type ControlHandler<S extends ControlMethodSpec> = (params: Static<S['params']>, ctx: ControlContext) => Static<S['result']> | Promise<Static<S['result']>>;

/** Handlers for (some of) the methods of table `T`, by key. */
export type ControlHandlers<T extends ControlTable = ControlApi> = { [K in keyof T]?: ControlHandler<T[K]> };

/** JSON-RPC methods by wire name, as `LocalEndpoint.addMethods` takes them. */
export type ControlMethods = Record<string, RpcMethod>;

/** Throws invalid params saying what is wrong with `params` (each field named; no value echoed). */
function checkParams(spec: ControlMethodSpec, params: unknown): void {
  if (params === null || typeof params !== 'object' || Array.isArray(params)) throw new RpcError(RPC.invalid_params, 'params must be an object', { type: 'invalid_arguments' });
  const violations = schemaValidator.validate(spec.params, params);
  if (!violations.length) return;
  const props = spec.params.properties as Record<string, { errorMessage?: unknown }>;
  const said = violations.map(({ pointer, message }) => {
    const field = pointer.replace(/^\//, '');
    const own = props[field.split('/')[0]!]?.errorMessage;
    return `${field || 'params'} ${typeof own === 'string' && field && !field.includes('/') && message !== 'is required' ? own : message}`;
  });
  throw new RpcError(RPC.invalid_params, said.join('; '), { type: 'invalid_arguments' });
}

/**
 * The JSON-RPC methods of `handlers` (keys of `table`), under their wire names. Each requires the local
 * token and checks its params against the table before the handler runs.
 */
export function serveControl<T extends ControlTable>(table: T, handlers: ControlHandlers<T>): ControlMethods {
  const out: ControlMethods = {};
  for (const [key, handler] of Object.entries(handlers) as [string, ControlHandler<ControlMethodSpec> | undefined][]) {
    if (!handler) continue;
    const spec = table[key];
    if (!spec) throw new Error(`no control method "${key}" in the table`);
    out[spec.method] = async (params, ctx) => {
      if (!ctx?.authenticated) throw new WireError('unauthorized', 'The local token is missing or wrong.');
      const p = params ?? {};
      checkParams(spec, p);
      return handler(p as never, ctx);
    };
  }
  return out;
}

/** `serveControl` over the control API's own table. */
export const serveControlApi = (handlers: ControlHandlers): ControlMethods => serveControl(CONTROL_API, handlers);
