/**
 * Building call outcomes (PROTOCOL.md §6.3) in one place, so every path produces the same shape.
 */
import { WireError, type ErrorType, type SideEffects } from './errors.js';
import type { CallState, ConfirmationInfo, Outcome } from './messages.js';

/**
 * Outcome of a call that never started: refused before acceptance on the device (never journalled),
 * or given up by the bridge. Shared by both sides so the shape cannot drift.
 */
export function preAcceptOutcome(callId: string, fn: string, state: CallState, err: WireError): Outcome {
  return {
    call_id: callId,
    function: fn,
    state,
    error: err.toCallError(),
    replayed: false,
    accepted_at: null,
    started_at: null,
    finished_at: new Date().toISOString(),
    duration_ms: null,
  };
}

/** Fields of an accepted call that end up in its outcome. */
export interface CallTimes {
  callId: string;
  fn: string;
  acceptedAt: string;
  startedAt: string | null;
  confirmation?: ConfirmationInfo;
}

/** Outcome of an accepted call that ended with an error. */
export function errorOutcome(t: CallTimes, state: CallState, type: ErrorType, message: string, sideEffects: SideEffects, details?: Record<string, unknown>, retryable?: boolean): Outcome {
  const opts: { details?: Record<string, unknown>; retryable?: boolean; sideEffects: SideEffects } = { sideEffects };
  if (details) opts.details = details;
  if (retryable !== undefined) opts.retryable = retryable;
  return finalOutcome(t, state, { error: new WireError(type, message, opts).toCallError() });
}

/** Outcome of an accepted call with the given result fields. */
export function finalOutcome(t: CallTimes, state: CallState, fields: Partial<Pick<Outcome, 'output' | 'output_valid' | 'error'>>): Outcome {
  const finished = new Date();
  const o: Outcome = {
    call_id: t.callId,
    function: t.fn,
    state,
    ...('output' in fields ? { output: fields.output, output_valid: fields.output_valid ?? true } : {}),
    error: fields.error ?? null,
    replayed: false,
    accepted_at: t.acceptedAt,
    started_at: t.startedAt,
    finished_at: finished.toISOString(),
    duration_ms: t.startedAt ? Math.max(0, finished.getTime() - Date.parse(t.startedAt)) : null,
  };
  if (t.confirmation) o.confirmation = t.confirmation;
  return o;
}

/** Milliseconds since the epoch encoded in a UUIDv7, or undefined for other ids. */
export function uuidv7Time(id: string): number | undefined {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(id)) return undefined;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
