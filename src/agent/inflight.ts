/**
 * An accepted call while it is not terminal: what the dispatcher's parts (admission's attach, the start
 * path, execution, aborts, notes, progress) share about it.
 */
import type { PreSerialized } from '../protocol/peer.js';
import type { CallState, Outcome } from '../protocol/messages.js';
import type { CallTimes } from '../protocol/outcomes.js';
import type { CallAbort } from './abort.js';
import type { ProgressThrottle } from './progress.js';
import type { RegisteredFunction } from './registry.js';
import type { ConsentResource } from './seams.js';
import type { NoteSubject } from './state-notes.js';

/** One call the dispatcher is working on. */
export interface InFlight extends NoteSubject {
  readonly callId: string;
  readonly fn: string;
  readonly digest: string;
  readonly reg: RegisteredFunction;
  /** The resources the call touches, once resolved (for the audit row: the names people know them by). */
  resources?: readonly ConsentResource[];
  /** The accept is queued in (or committed to) the journal. */
  journalled: boolean;
  state: CallState;
  /** This call's execution budget (its `timeout_ms`, capped), once it has started: the timeout message names it. */
  budgetMs?: number;
  /**
   * Fires on cancel, lease expiry and shutdown at any stage, and on timeout once the execution budget
   * runs (it starts after consent, so a prompt never sees a timeout reason).
   */
  readonly ab: CallAbort;
  /** The handler called `ctx.commit()`: past its point of no return. */
  committed: boolean;
  handlerRunning: boolean;
  /** Set while execution waits for the handler: wakes it when the call is aborted. */
  wake: (() => void) | undefined;
  /** The outcome with its JSON (a duplicate invoke attaches to it). */
  promise: Promise<PreSerialized<Outcome>>;
  readonly times: CallTimes;
  /** Made on the call's first progress report. */
  progress: ProgressThrottle | undefined;
}
