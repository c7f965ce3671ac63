/**
 * Wire messages of PROTOCOL.md §3–§7 as JSON Schemas and TypeScript types from one source (TypeBox).
 * The schemas are what the peers validate params against; the types are `Static<>` of the same objects.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** Protocol version this implementation speaks. */
export const PROTOCOL_VERSION = '1.0';
/**
 * The version the device agent offers in `session.hello` (§3.1, "Changes" 1.1 and 1.2): the bridge answers
 * the one it speaks on that session, never above this (a 1.1 bridge answers "1.1", a 1.0 one "1.0").
 */
export const CLIENT_PROTOCOL_VERSION = '1.2';
/** True when a session at `version` (the bridge's hello answer) coalesces state notes (§6.2): 1.1 and later 1.x. */
export function coalescesStateNotes(version: string): boolean {
  const [major, minor] = version.split('.').map(Number);
  return major === 1 && minor !== undefined && minor >= 1;
}
/** True when a session at `version` carries the bridge-attested `runtime` in every invoke (§6.1): 1.2 and later 1.x. */
export function attestsRuntime(version: string): boolean {
  const [major, minor] = version.split('.').map(Number);
  return major === 1 && minor !== undefined && minor >= 2;
}
/** WebSocket subprotocol (§1). */
export const SUBPROTOCOL = 'aios-device.v1';
/**
 * The absolute maximum of every time parameter a runtime sends (`timeout_ms`, `confirm_timeout_ms`,
 * `wait_timeout_ms`): 24 h. Above it a request is refused (a timer cannot even hold 2³¹ ms); below it the
 * descriptor's caps of §6.4 apply.
 */
export const MAX_TIME_PARAM_MS = 24 * 60 * 60 * 1000;

const Str = (o: object = {}) => Type.String(o);
const Obj = <T extends Parameters<typeof Type.Object>[0]>(p: T, extra = true) =>
  Type.Object(p, { additionalProperties: extra });
const LitUnion = <T extends readonly string[]>(vals: T) => Type.Union(vals.map((v) => Type.Literal(v)));

/** Function id pattern (§4). */
export const FUNCTION_ID_PATTERN = '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)+$';
/** call_id pattern (§5). */
export const CALL_ID_PATTERN = '^[A-Za-z0-9._:-]{1,128}$';

export const PermissionLevel = LitUnion(['public', 'low', 'medium', 'high', 'critical'] as const);
export type PermissionLevel = Static<typeof PermissionLevel>;
export const Confirmation = LitUnion(['never', 'policy', 'always'] as const);
export const Access = LitUnion(['public', 'restricted', 'private'] as const);
export type Access = Static<typeof Access>;

export const Risk = Obj({
  read_only: Type.Boolean(),
  destructive: Type.Boolean(),
  idempotent: Type.Boolean(),
  physical: Type.Boolean(),
});
export type Risk = Static<typeof Risk>;

/** A function descriptor (§4). */
export const Descriptor = Obj({
  id: Str({ pattern: FUNCTION_ID_PATTERN, maxLength: 128 }),
  name: Str({ minLength: 1 }),
  description: Str(),
  version: Str(),
  capability_type: Str({ pattern: '^[a-z][a-z0-9_]*$' }),
  access: Access,
  permission_level: PermissionLevel,
  risk: Type.Optional(Risk),
  confirmation: Confirmation,
  examples: Type.Optional(Type.Array(Str())),
  input_schema: Type.Object({}, { additionalProperties: true }),
  output_schema: Type.Object({}, { additionalProperties: true }),
  timeout_ms_default: Type.Integer({ minimum: 1 }),
  timeout_ms_max: Type.Integer({ minimum: 1 }),
  cancellable: Type.Boolean(),
  locks: Type.Array(Str()),
  descriptor_hash: Type.Optional(Str({ pattern: '^sha256-[A-Za-z0-9_-]{43}$' })),
});
export type Descriptor = Static<typeof Descriptor>;

export const CallState = LitUnion([
  'accepted', 'awaiting_confirmation', 'running',
  'completed', 'failed', 'cancelled', 'rejected', 'expired', 'unknown',
] as const);
export type CallState = Static<typeof CallState>;
/** States after which nothing changes (§6.2). */
export const TERMINAL_STATES: ReadonlySet<CallState> = new Set(['completed', 'failed', 'cancelled', 'rejected', 'expired', 'unknown']);
export const isTerminal = (s: string): boolean => TERMINAL_STATES.has(s as CallState);

export const Requester = Obj({ kind: Str(), id: Type.Optional(Str()), name: Type.Optional(Str()) });
export type Requester = Static<typeof Requester>;
/**
 * The submitter the bridge attests (§6.1, 1.2): the identity of the credential that submitted the call
 * (never the credential itself), as opposed to `requester`, which is what the runtime claims.
 */
export const AttestedRuntime = Obj({ id: Str({ minLength: 1, maxLength: 128 }), name: Str({ minLength: 1, maxLength: 200 }) });
export type AttestedRuntime = Static<typeof AttestedRuntime>;

/** `aios/session.hello` params (§3.1). */
export const HelloParams = Obj({
  protocol_version: Str(),
  client: Obj({ name: Str(), version: Str(), platform: Str(), arch: Str() }),
  device: Obj({ id: Str({ minLength: 1 }), name: Type.Optional(Str()) }),
  workspace_id: Str({ minLength: 1 }),
  user_id: Str({ minLength: 1 }),
  session_id: Type.Optional(Str()),
  functions_revision: Type.Integer({ minimum: 0 }),
  adapter_card: Type.Optional(Type.Object({}, { additionalProperties: true })),
  limits: Obj({
    max_message_bytes: Type.Integer({ minimum: 1024 }),
    max_concurrent_calls: Type.Integer({ minimum: 1 }),
    dedupe_retention_s: Type.Integer({ minimum: 1 }),
  }),
});
export type HelloParams = Static<typeof HelloParams>;

export const HelloResult = Obj({
  session_id: Str(),
  protocol_version: Str(),
  server_time: Str(),
  heartbeat_ms: Type.Integer({ minimum: 1 }),
  lease_ms: Type.Integer({ minimum: 0 }),
  min_client_version: Str(),
});
export type HelloResult = Static<typeof HelloResult>;

/** `aios/function.invoke` params (§6.1). */
export const InvokeParams = Obj({
  call_id: Str({ pattern: CALL_ID_PATTERN }),
  function: Str({ minLength: 1, maxLength: 128 }),
  arguments: Type.Object({}, { additionalProperties: true }),
  descriptor_hash: Type.Optional(Str()),
  workspace_id: Str(),
  user_id: Str(),
  device_id: Str(),
  timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TIME_PARAM_MS })),
  confirm_timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TIME_PARAM_MS })),
  requester: Type.Optional(Requester),
  runtime: Type.Optional(AttestedRuntime),
  attempt: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type InvokeParams = Static<typeof InvokeParams>;

export const CallErrorSchema = Obj({
  code: Type.Integer(),
  type: Str(),
  message: Str(),
  retryable: Type.Boolean(),
  side_effects: LitUnion(['none', 'possible', 'committed'] as const),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

export const ConfirmationInfo = Obj({
  required: Type.Boolean(),
  decision: LitUnion(['allowed', 'denied', 'timeout', 'unavailable', 'withdrawn', 'not_required'] as const),
  decided_by: LitUnion(['user', 'policy', 'remembered', 'system'] as const),
  remembered: Type.Boolean(),
});
export type ConfirmationInfo = Static<typeof ConfirmationInfo>;

/** A call outcome (§6.3). */
export const Outcome = Obj({
  call_id: Str(),
  function: Str(),
  state: CallState,
  output: Type.Optional(Type.Unknown()),
  output_valid: Type.Optional(Type.Boolean()),
  error: Type.Union([CallErrorSchema, Type.Null()]),
  replayed: Type.Boolean(),
  accepted_at: Type.Union([Str(), Type.Null()]),
  started_at: Type.Union([Str(), Type.Null()]),
  finished_at: Type.Union([Str(), Type.Null()]),
  duration_ms: Type.Union([Type.Integer(), Type.Null()]),
  confirmation: Type.Optional(ConfirmationInfo),
});
export type Outcome = Static<typeof Outcome>;

/** The non-terminal answer of `aios/call.get` (§6.7). */
export const CallStatus = Obj({ call_id: Str(), state: CallState });
export type CallStatus = Static<typeof CallStatus>;

export const CancelParams = Obj({ call_id: Str({ pattern: CALL_ID_PATTERN }), reason: Type.Optional(Str()) });
export type CancelParams = Static<typeof CancelParams>;
export const CallGetParams = Obj({ call_id: Str({ pattern: CALL_ID_PATTERN }) });
export const CallListParams = Obj({
  since: Type.Optional(Str()),
  states: Type.Optional(Type.Array(CallState)),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  cursor: Type.Optional(Str()),
});
export type CallListParams = Static<typeof CallListParams>;
export const CallListResult = Obj({ calls: Type.Array(Type.Union([Outcome, CallStatus])), next_cursor: Type.Optional(Str()) });

export const FunctionListParams = Obj({ cursor: Type.Optional(Str()) });
export const FunctionListResult = Obj({
  functions: Type.Array(Descriptor),
  revision: Type.Integer({ minimum: 0 }),
  next_cursor: Type.Optional(Str()),
});
export type FunctionListResult = Static<typeof FunctionListResult>;

const IdName = Obj({ id: Str(), name: Str() });
export const ToolsChanged = Obj({
  revision: Type.Integer({ minimum: 0 }),
  added: Type.Array(IdName),
  removed: Type.Array(IdName),
  updated: Type.Array(IdName),
});
export type ToolsChanged = Static<typeof ToolsChanged>;

export const CallStateNote = Obj({ call_id: Str(), state: CallState, seq: Type.Integer({ minimum: 0 }), at: Str() });
export type CallStateNote = Static<typeof CallStateNote>;
export const ProgressNote = Obj({
  call_id: Str(),
  seq: Type.Integer({ minimum: 0 }),
  progress: Type.Optional(Type.Number()),
  total: Type.Optional(Type.Number()),
  message: Type.Optional(Str()),
});
export type ProgressNote = Static<typeof ProgressNote>;

export const CallReportParams = Obj({ outcomes: Type.Array(Outcome, { minItems: 1 }) });
export const CallReportResult = Obj({ accepted: Type.Array(Str()) });
export const PingResult = Obj({ time: Str() });

/** A blob reference (§9). */
export const BlobRef = Obj({
  blob_id: Str({ pattern: '^[A-Za-z0-9_-]{1,128}$' }),
  sha256: Str({ pattern: '^[0-9a-f]{64}$' }),
  size: Type.Integer({ minimum: 0 }),
  media_type: Str(),
});
export type BlobRef = Static<typeof BlobRef>;

/** Method names of the device session. */
export const METHODS = {
  hello: 'aios/session.hello',
  ping: 'aios/session.ping',
  functionList: 'aios/function.list',
  invoke: 'aios/function.invoke',
  cancel: 'aios/function.cancel',
  callGet: 'aios/call.get',
  callList: 'aios/call.list',
  callReport: 'aios/call.report',
  toolsChanged: 'aios/notification.tools_changed',
  callState: 'aios/notification.call_state',
  progress: 'aios/notification.progress',
  registrySearch: 'aios/registry.search',
  registryInfo: 'aios/registry.info',
  registryRefresh: 'aios/registry.refresh',
  registrySubscribe: 'aios/registry.subscribe',
  registryUnsubscribe: 'aios/registry.unsubscribe',
} as const;

/** Params schema per method, used by peers to answer -32602 on malformed params. */
export const PARAMS_SCHEMAS: Record<string, TSchema> = {
  [METHODS.hello]: HelloParams,
  [METHODS.invoke]: InvokeParams,
  [METHODS.cancel]: CancelParams,
  [METHODS.callGet]: CallGetParams,
  [METHODS.callList]: CallListParams,
  [METHODS.callReport]: CallReportParams,
  [METHODS.functionList]: FunctionListParams,
  [METHODS.toolsChanged]: ToolsChanged,
  [METHODS.callState]: CallStateNote,
  [METHODS.progress]: ProgressNote,
};
