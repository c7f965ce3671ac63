/**
 * The error catalogue of PROTOCOL.md §2: one row per error type, the single source for codes,
 * retryability and the layer that produces them. Every wire error is built from this table.
 */

/** Where an error may appear on the wire. */
export type ErrorLayer = 'call' | 'protocol' | 'bridge' | 'call/protocol' | 'protocol/call';

/** `side_effects` of a call error (§2). */
export type SideEffects = 'none' | 'possible' | 'committed';

/** One catalogue row. */
export interface ErrorSpec {
  readonly code: number;
  readonly retryable: boolean;
  readonly layer: ErrorLayer;
  readonly meaning: string;
}

/** The catalogue, keyed by wire `type`. */
export const ERRORS = {
  unknown_function: { code: -41001, retryable: false, layer: 'call', meaning: 'function not registered, disabled by the user, or not on the whitelist' },
  invalid_arguments: { code: -41002, retryable: false, layer: 'call', meaning: 'arguments fail the published input schema' },
  function_changed: { code: -41003, retryable: false, layer: 'call', meaning: 'descriptor_hash does not match the client descriptor' },
  identity_mismatch: { code: -41004, retryable: false, layer: 'call/protocol', meaning: 'workspace, user or device is not this client' },
  call_expired: { code: -41005, retryable: false, layer: 'call', meaning: 'call too old or its start deadline passed' },
  idempotency_conflict: { code: -41006, retryable: false, layer: 'call', meaning: 'call_id already used with a different function or arguments' },
  permission_denied: { code: -41010, retryable: false, layer: 'call', meaning: 'OS permission missing, resource not granted, path outside granted roots, type or size refused' },
  user_rejected: { code: -41011, retryable: false, layer: 'call', meaning: 'the user declined the confirmation prompt' },
  confirmation_timeout: { code: -41012, retryable: true, layer: 'call', meaning: 'nobody answered the prompt in time' },
  confirmation_unavailable: { code: -41013, retryable: false, layer: 'call', meaning: 'a confirmation is required but no prompt can be shown' },
  paused: { code: -41014, retryable: true, layer: 'call', meaning: 'the user paused the client' },
  device_unavailable: { code: -41020, retryable: true, layer: 'call', meaning: 'the hardware or software is absent or offline' },
  device_busy: { code: -41021, retryable: true, layer: 'call', meaning: 'the resource is locked and the wait would exceed the deadline' },
  timeout: { code: -41030, retryable: false, layer: 'call', meaning: 'execution exceeded timeout_ms; the handler was aborted' },
  cancelled: { code: -41031, retryable: false, layer: 'call', meaning: 'cancelled by aios/function.cancel' },
  not_cancellable: { code: -41032, retryable: false, layer: 'protocol', meaning: 'the call is past its point of no return' },
  execution_failed: { code: -41040, retryable: false, layer: 'call', meaning: 'the handler failed' },
  execution_interrupted: { code: -41041, retryable: false, layer: 'call', meaning: 'the client stopped while the call ran; effect unknown' },
  device_offline: { code: -41050, retryable: true, layer: 'bridge', meaning: 'the target device has no live session' },
  client_outdated: { code: -41051, retryable: false, layer: 'protocol', meaning: 'client version below the bridge minimum' },
  unauthorized: { code: -41052, retryable: false, layer: 'protocol', meaning: 'token invalid, expired or revoked' },
  rate_limited: { code: -41053, retryable: true, layer: 'protocol/call', meaning: 'too many calls' },
  payload_too_large: { code: -41054, retryable: false, layer: 'call', meaning: 'arguments, output or blob over the limit' },
  not_ready: { code: -41060, retryable: true, layer: 'protocol', meaning: 'a method other than session.hello arrived before the session' },
  unsupported_protocol_version: { code: -41061, retryable: false, layer: 'protocol', meaning: 'no common protocol version' },
  store_unavailable: { code: -41062, retryable: true, layer: 'bridge', meaning: 'the bridge cannot reach its store (a clustered bridge\'s database)' },
  device_limits_exceeded: { code: -41063, retryable: false, layer: 'bridge', meaning: 'a device sent more than the bridge\'s per-device bounds; the session is closed' },
} as const satisfies Record<string, ErrorSpec>;

/** A wire error type name. */
export type ErrorType = keyof typeof ERRORS;

/** Standard JSON-RPC envelope codes (§2 layer 1). */
export const RPC = {
  parse_error: -32700,
  invalid_request: -32600,
  method_not_found: -32601,
  invalid_params: -32602,
  internal_error: -32603,
} as const;

/** True when `t` names a catalogue row. */
export function isErrorType(t: unknown): t is ErrorType {
  return typeof t === 'string' && Object.prototype.hasOwnProperty.call(ERRORS, t);
}

/** Looks a type up by its numeric code. */
export function typeForCode(code: number): ErrorType | undefined {
  for (const [t, spec] of Object.entries(ERRORS)) if (spec.code === code) return t as ErrorType;
  return undefined;
}

/** The `outcome.error` object of a call (§2 layer 3, §6.3). */
export interface CallErrorBody {
  code: number;
  type: ErrorType;
  message: string;
  retryable: boolean;
  side_effects: SideEffects;
  details?: Record<string, unknown>;
}

/** The `data` of a JSON-RPC protocol error (§2 layer 2). */
export interface ProtocolErrorData {
  type: ErrorType;
  retryable: boolean;
  details?: Record<string, unknown>;
}

/**
 * A wire error: carries the protocol's numeric code, its `type`, `retryable` and `side_effects`.
 * Thrown by handlers and protocol code alike; the dispatcher turns it into an outcome error and the
 * peer into a JSON-RPC error. Never carries private data in `message`.
 */
export class WireError extends Error {
  readonly type: ErrorType;
  readonly code: number;
  readonly retryable: boolean;
  readonly sideEffects: SideEffects;
  /** The side effects the thrower stated, if it stated any (the dispatcher derives them otherwise). */
  readonly declaredSideEffects: SideEffects | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    type: ErrorType,
    message: string,
    opts: { details?: Record<string, unknown>; retryable?: boolean; sideEffects?: SideEffects } = {},
  ) {
    super(message);
    this.name = 'WireError';
    this.type = type;
    this.code = ERRORS[type].code;
    this.retryable = opts.retryable ?? ERRORS[type].retryable;
    this.sideEffects = opts.sideEffects ?? 'none';
    this.declaredSideEffects = opts.sideEffects;
    this.details = opts.details;
  }

  /** The `outcome.error` form. */
  toCallError(): CallErrorBody {
    const body: CallErrorBody = {
      code: this.code,
      type: this.type,
      message: this.message,
      retryable: this.retryable,
      side_effects: this.sideEffects,
    };
    if (this.details) body.details = this.details;
    return body;
  }

  /** The JSON-RPC `error` form for protocol-layer errors. */
  toRpcError(): { code: number; message: string; data: ProtocolErrorData } {
    const data: ProtocolErrorData = { type: this.type, retryable: this.retryable };
    if (this.details) data.details = this.details;
    return { code: this.code, message: this.message, data };
  }

  /** Revives a wire error from a plain JSON-RPC error or call error object (never rely on instanceof across boundaries). */
  static fromPlain(e: { code?: unknown; message?: unknown; data?: unknown; type?: unknown; retryable?: unknown; side_effects?: unknown; details?: unknown }): WireError | undefined {
    const data = (e.data && typeof e.data === 'object' ? e.data : e) as Record<string, unknown>;
    const t = isErrorType(data['type']) ? data['type'] : typeof e.code === 'number' ? typeForCode(e.code) : undefined;
    if (!t) return undefined;
    const opts: { details?: Record<string, unknown>; retryable?: boolean; sideEffects?: SideEffects } = {};
    if (data['details'] && typeof data['details'] === 'object') opts.details = data['details'] as Record<string, unknown>;
    if (typeof data['retryable'] === 'boolean') opts.retryable = data['retryable'];
    const se = (e as Record<string, unknown>)['side_effects'];
    if (se === 'none' || se === 'possible' || se === 'committed') opts.sideEffects = se;
    return new WireError(t, typeof e.message === 'string' ? e.message : t, opts);
  }
}

/** A JSON-RPC envelope error (-327xx) raised by the peer. */
export class RpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message);
    this.name = 'RpcError';
  }
}

/** True for errors that mean "cancelled", which are not faults to alert on. */
export function isCancellation(e: unknown): boolean {
  return (e instanceof WireError && e.type === 'cancelled') || (e instanceof Error && e.name === 'AbortError');
}
