/**
 * Why a call stops early (PROTOCOL.md §3.3, §6.4, §6.5, §11) and the outcome each reason gives: before
 * the handler started (nothing ran) and while it ran (what its grace period let us learn).
 */
import type { SideEffects } from '../protocol/errors.js';
import type { Outcome } from '../protocol/messages.js';
import { errorOutcome, type CallTimes } from '../protocol/outcomes.js';
import type { AbortLike } from './locks.js';

/**
 * What stopped a call: `aios/function.cancel`, its execution budget, the agent stopping, the bridge lease,
 * or the user pausing the agent (only calls whose handler has not started are stopped for a pause).
 */
export type AbortKind = 'cancel' | 'timeout' | 'shutdown' | 'lease' | 'pause';

/** The reason a call's signal carries (`ctx.signal.reason` for handlers). */
export class AbortReason extends Error {
  constructor(readonly kind: AbortKind) {
    super(kind);
    this.name = 'AbortError';
  }
}

/**
 * A call's abort state. The dispatcher's own waits listen here; a real AbortSignal is made only when
 * something asks for one (a handler reading `ctx.signal`, a prompt): most calls never need it.
 */
export class CallAbort implements AbortLike {
  aborted = false;
  reason: AbortReason | undefined;
  private listeners: (() => void)[] | undefined;
  private ctl: AbortController | undefined;

  /** The call's AbortSignal, made on first use (already aborted if the call is). */
  get signal(): AbortSignal {
    if (!this.ctl) {
      this.ctl = new AbortController();
      if (this.aborted) this.ctl.abort(this.reason);
    }
    return this.ctl.signal;
  }

  /** Fires once: the signal (if made) and every listener. */
  abort(reason: AbortReason): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.ctl?.abort(reason);
    const ls = this.listeners;
    this.listeners = undefined;
    if (ls) for (const l of ls) l();
  }

  /** AbortLike: a wait that ends when the call is aborted. */
  addEventListener(_type: 'abort', listener: () => void): void {
    (this.listeners ??= []).push(listener);
  }

  /** AbortLike: the wait ended on its own. */
  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners ? this.listeners.indexOf(listener) : -1;
    if (i >= 0) this.listeners!.splice(i, 1);
  }
}

const LEASE_MESSAGE = 'The call was cancelled because the bridge did not come back in time.';

/**
 * The outcome of a call aborted before its handler started (nothing ran: `side_effects: none`), or
 * undefined when it was not aborted or only its budget ran out (the caller says what it was waiting for).
 */
export function abortedBeforeStart(t: CallTimes, ab: CallAbort): Outcome | undefined {
  const r = ab.reason;
  if (!ab.aborted || !r || r.kind === 'timeout') return undefined;
  if (r.kind === 'shutdown') return errorOutcome(t, 'failed', 'execution_interrupted', 'The device client stopped before this call started; it did not run.', 'none');
  if (r.kind === 'lease') return errorOutcome(t, 'cancelled', 'cancelled', LEASE_MESSAGE, 'none', { reason: 'lease_expired' });
  if (r.kind === 'pause') return pausedBeforeStart(t);
  return errorOutcome(t, 'cancelled', 'cancelled', 'The call was cancelled.', 'none');
}

/** The outcome of a call whose handler had not started when the user paused the agent (issue 27, finding 5). */
export function pausedBeforeStart(t: CallTimes): Outcome {
  return errorOutcome(t, 'rejected', 'paused', 'The user paused this device client before the call started; it did not run.', 'none');
}

/**
 * The outcome of a call aborted while its handler ran; `budgetMs` is the call's own execution budget;
 * `halted`: the handler stopped on its signal (false when it ignored it: ran to its end or past the grace period).
 */
export function abortedWhileRunning(t: CallTimes, kind: AbortKind, side: SideEffects, budgetMs: number, halted = true): Outcome {
  switch (kind) {
    case 'timeout':
      // A handler that ignored its signal (ran on to its end, or past the grace period) was not stopped: say so.
      return halted
        ? errorOutcome(t, 'failed', 'timeout', `The call ran longer than its ${budgetMs} ms budget and was stopped.`, side)
        : errorOutcome(t, 'failed', 'timeout', `The call ran longer than its ${budgetMs} ms budget; its handler did not stop within the grace period.`, 'possible');
    case 'shutdown':
      return errorOutcome(t, 'unknown', 'execution_interrupted', 'The device client stopped while this call was running.', side === 'none' ? 'none' : 'possible');
    case 'lease':
      return errorOutcome(t, 'cancelled', 'cancelled', LEASE_MESSAGE, side, { reason: 'lease_expired' });
    case 'pause': // not sent to running calls; the handler's own onPause decides what they do
      return errorOutcome(t, 'failed', 'paused', 'The user paused this device client while the call was running.', side);
    default:
      return errorOutcome(t, 'cancelled', 'cancelled', 'The call was cancelled.', side);
  }
}
