/**
 * Params schemas of the `aios/registry.*` methods (PROTOCOL.md §7.4, AIOS discovery spec §3.3), checked
 * before a method runs so malformed params answer -32602.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { RPC, RpcError } from '../protocol/errors.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import { PermissionLevel } from '../protocol/messages.js';

const Event = Type.Union([Type.Literal('added'), Type.Literal('removed'), Type.Literal('updated')]);

export const SearchParams = Type.Object(
  {
    query: Type.Optional(Type.String()),
    type: Type.Optional(Type.String()),
    capabilities: Type.Optional(Type.Array(Type.String())),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    cursor: Type.Optional(Type.String({ pattern: '^\\d+$' })),
  },
  { additionalProperties: false },
);
export type SearchParams = Static<typeof SearchParams>;
export const InfoParams = Type.Object({ adapter_id: Type.String({ minLength: 1 }) }, { additionalProperties: false });
export const RefreshParams = Type.Object(
  { scope: Type.Optional(Type.Union([Type.Literal('local'), Type.Literal('remote'), Type.Literal('all')])) },
  { additionalProperties: false },
);
export type RefreshScope = 'local' | 'remote' | 'all';
export const SubscribeParams = Type.Object({ events: Type.Array(Event, { minItems: 1 }) }, { additionalProperties: false });
export type SubscribeEvent = Static<typeof Event>;
export const UnsubscribeParams = Type.Object({ subscription_id: Type.String({ minLength: 1 }) }, { additionalProperties: false });
/** `ca`: an extra CA certificate (PEM) for the adapter's origin, as `adapters add --ca` reads it (local endpoint only). */
export const AddRemoteParams = Type.Object({ url: Type.String({ minLength: 1 }), ca: Type.Optional(Type.String({ minLength: 1, maxLength: 65536 })) }, { additionalProperties: false });
export const PendingParams = Type.Object({}, { additionalProperties: false });
/** `levels`: the level chosen per function (`adapters approve --level <fn>=<level>`); functions not named are `high`. */
export const ApproveParams = Type.Object(
  { adapter_id: Type.String({ minLength: 1 }), levels: Type.Optional(Type.Record(Type.String({ minLength: 1 }), PermissionLevel)) },
  { additionalProperties: false },
);
export const RemoveRemoteParams = Type.Object({ adapter_id: Type.String({ minLength: 1 }) }, { additionalProperties: false });

/**
 * Registry method names, including the client extensions of the local endpoint (never served to the
 * bridge): `aios-device adapters add|remove|pending|approve`.
 */
export const REGISTRY_METHODS = {
  search: 'aios/registry.search',
  info: 'aios/registry.info',
  refresh: 'aios/registry.refresh',
  subscribe: 'aios/registry.subscribe',
  unsubscribe: 'aios/registry.unsubscribe',
  addRemote: 'aios/registry.add_remote',
  removeRemote: 'aios/registry.remove_remote',
  pending: 'aios/registry.pending',
  approve: 'aios/registry.approve',
} as const;

/** Returns `params` typed, or throws JSON-RPC -32602 with the violations. */
export function checkParams<T extends TSchema>(schema: T, params: unknown): Static<T> {
  const v = schemaValidator.validate(schema, params ?? {});
  if (v.length) throw new RpcError(RPC.invalid_params, 'Invalid params.', { violations: v });
  return (params ?? {}) as Static<T>;
}
