/**
 * Admission of an invoke (PROTOCOL.md §6.1, §5): the checks before a call is accepted, in the spec's
 * order: identity → function known and enabled → `descriptor_hash` → arguments (I-JSON, then the input
 * schema) → deduplication (a live call, then the journal) → UUIDv7 age → pause → shutting down.
 * Nothing here writes: a refusal is not journalled (§5), a replay returns what the journal holds.
 */
import { argsDigest } from '../protocol/hash.js';
import { ijsonViolation } from '../protocol/ijson.js';
import { RPC, RpcError, WireError } from '../protocol/errors.js';
import type { CallState, Descriptor, InvokeParams, Outcome } from '../protocol/messages.js';
import { preAcceptOutcome, uuidv7Time } from '../protocol/outcomes.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import type { Call } from './call/call.js';
import type { Journal } from './journal.js';
import type { FunctionRegistry, RegisteredFunction } from './registry.js';
import type { ConsentGate } from '../seams/call-seams.js';

/** The identity a dispatcher serves. */
export interface Identity {
  workspaceId: string;
  userId: string;
  deviceId: string;
}

/** What admission decided about one invoke. */
export type Admission =
  /** Accept it: a new call of `reg` with this arguments digest. */
  | { readonly kind: 'admit'; readonly reg: RegisteredFunction; readonly digest: string }
  /** Refused before acceptance (reported to the observers, not journalled). */
  | { readonly kind: 'refused'; readonly outcome: Outcome; readonly descriptor: Descriptor | undefined }
  /** A finished call (or a tombstone) with this call_id: its stored outcome, replayed. */
  | { readonly kind: 'replay'; readonly outcome: Outcome }
  /** The same call is running: answer with its outcome when it ends. */
  | { readonly kind: 'attach'; readonly call: Call };

/** What admission reads. */
export interface AdmissionOptions {
  identity: Identity;
  registry: FunctionRegistry;
  consent: Pick<ConsentGate, 'isDisabled' | 'isPaused'>;
  journal: Pick<Journal, 'get'>;
  dedupeRetentionS: number;
  /** The call with this id the dispatcher is working on, if any. */
  live(callId: string): Call | undefined;
  /** False once the dispatcher is shutting down. */
  accepting(): boolean;
}

/** Decides whether an invoke becomes a call (§6.1's checks up to the policy step). */
export function admit(o: AdmissionOptions, p: InvokeParams): Admission {
  const id = o.identity;
  const reg = o.registry.get(p.function);
  if (p.workspace_id !== id.workspaceId || p.user_id !== id.userId || p.device_id !== id.deviceId) {
    return refuse(p, reg, 'failed', new WireError('identity_mismatch', 'The workspace, user or device of this call is not this client\'s.'));
  }
  if (!reg || o.consent.isDisabled(p.function)) {
    return refuse(p, reg, 'failed', new WireError('unknown_function', `No enabled function is registered as ${p.function}.`));
  }
  if (p.descriptor_hash !== undefined && p.descriptor_hash !== reg.descriptor.descriptor_hash) {
    return refuse(p, reg, 'failed', new WireError('function_changed', 'The function\'s descriptor has changed since the caller read it.', { details: { descriptor_hash: reg.descriptor.descriptor_hash } }));
  }
  const notIJson = ijsonViolation(p.arguments);
  if (notIJson) return refuse(p, reg, 'failed', new WireError('invalid_arguments', 'The arguments are not I-JSON or nest too deep.', { details: { violations: [notIJson] } }));
  let violations;
  try {
    violations = schemaValidator.validate(reg.descriptor.input_schema, p.arguments);
  } catch (e) {
    // Schemas compile on first use; one that passed the meta-schema at registration but cannot compile
    // (e.g. a $ref to nothing) refuses the call, before anything ran.
    return refuse(p, reg, 'failed', new WireError('execution_failed', `The function's input schema cannot be compiled: ${(e as Error).message}`));
  }
  if (violations.length) {
    return refuse(p, reg, 'failed', new WireError('invalid_arguments', 'The arguments do not match the function\'s input schema.', { details: { violations } }));
  }

  const digest = argsDigest(p.function, p.arguments);
  const live = o.live(p.call_id);
  if (live) {
    if (live.digest !== digest) return conflict(p, reg);
    return { kind: 'attach', call: live };
  }
  const row = o.journal.get(p.call_id);
  if (row) {
    if (row.tombstone && row.outcome) return { kind: 'replay', outcome: { ...row.outcome, function: p.function, replayed: true } };
    if (row.argsDigest !== digest) return conflict(p, reg);
    if (row.outcome) return { kind: 'replay', outcome: { ...row.outcome, replayed: true } };
    // Non-terminal without a live call happens only if recovery did not run; never re-run it.
    throw new RpcError(RPC.internal_error, 'The call is journalled but not running; ask aios/call.get.');
  }
  const minted = uuidv7Time(p.call_id);
  if (minted !== undefined && Date.now() - minted > o.dedupeRetentionS * 1000) {
    return refuse(p, reg, 'expired', new WireError('call_expired', 'The call is older than the deduplication window and was not run.'));
  }
  if (o.consent.isPaused()) {
    return refuse(p, reg, 'rejected', new WireError('paused', 'The user has paused this device client.'));
  }
  if (!o.accepting()) {
    return refuse(p, reg, 'rejected', new WireError('paused', 'The device client is shutting down.', { retryable: true }));
  }
  return { kind: 'admit', reg, digest };
}

function refuse(p: InvokeParams, reg: RegisteredFunction | undefined, state: CallState, err: WireError): Admission {
  return { kind: 'refused', outcome: preAcceptOutcome(p.call_id, p.function, state, err), descriptor: reg?.descriptor };
}

function conflict(p: InvokeParams, reg: RegisteredFunction): Admission {
  return refuse(p, reg, 'failed', new WireError('idempotency_conflict', 'This call_id was already used with a different function or arguments.'));
}
