/**
 * One accepted call on the device while it is not terminal, and the one owner of its state (issue 32, item
 * 2). `enter` moves it along the transition table below, writing the journal and sending the state note
 * together (the journal first: a note never tells the bridge of a state a crash would lose); `end` journals
 * its outcome through the outbox and ends its notes. Whether the call is in the journal yet is known here
 * only: a call refused before anything was written is journalled with its outcome, in the same write.
 * The dispatcher's parts (admission's attach, the start path, execution, aborts, progress) share the rest.
 */
import type { PreSerialized } from '../../protocol/peer.js';
import type { CallState, Outcome } from '../../protocol/messages.js';
import type { CallTimes } from '../../protocol/outcomes.js';
import type { CallAbort } from '../abort.js';
import type { Logger } from '../../base/logger.js';
import type { Journal } from '../journal.js';
import type { Outbox } from '../outbox.js';
import type { ProgressThrottle } from '../progress.js';
import type { RegisteredFunction } from '../registry.js';
import type { ConsentResource } from '../../seams/call-seams.js';
import type { NoteSubject, StateNotes } from '../state-notes.js';

/** The non-terminal states a call enters on the device (§6.2). */
export type LiveState = 'accepted' | 'awaiting_confirmation' | 'running';

/**
 * The device's transition table: from each state (`new`: nothing entered yet), the non-terminal states that
 * may follow. Any state may end (`end`). A running call never goes back; consent comes before the start.
 */
const NEXT: Readonly<Record<LiveState | 'new', readonly LiveState[]>> = {
  new: ['accepted', 'running'],
  accepted: ['awaiting_confirmation', 'running'],
  awaiting_confirmation: ['running'],
  running: [],
};

const ignore = (): void => undefined;

/** The journal could not take the call: it must not run. */
export class JournalFault extends Error {
  constructor(override readonly cause: unknown) {
    super('journal write failed');
  }
}

/** What every call of one dispatcher writes to. */
export interface CallDesk {
  readonly journal: Pick<Journal, 'accept' | 'setState'>;
  readonly notes: StateNotes;
  readonly outbox: Outbox;
}

/** One call the dispatcher is working on. */
export class Call implements NoteSubject {
  /** The state the call is in: the last one entered, or its outcome's once it ended. */
  state: CallState = 'accepted';
  /** The state the call last entered (`new` before the first). */
  private at: LiveState | 'new' = 'new';
  /** The accept is queued in (or committed to) the journal. */
  private journalled = false;
  /** The resources the call touches, once resolved (for the audit row: the names people know them by). */
  resources: readonly ConsentResource[] | undefined = undefined;
  /** This call's execution budget (its `timeout_ms`, capped), once it has started: the timeout message names it. */
  budgetMs: number | undefined = undefined;
  /** The handler called `ctx.commit()`: past its point of no return. */
  committed = false;
  handlerRunning = false;
  /** Set while execution waits for the handler: wakes it when the call is aborted. */
  wake: (() => void) | undefined = undefined;
  /** The outcome with its JSON (a duplicate invoke attaches to it); set right after construction. */
  promise!: Promise<PreSerialized<Outcome>>;
  /** Made on the call's first progress report. */
  progress: ProgressThrottle | undefined = undefined;
  // NoteSubject
  seq = 0;
  announced = false;
  held: CallState | undefined = undefined;
  heldAt: string | undefined = undefined;
  readonly times: CallTimes;

  constructor(
    private readonly desk: CallDesk,
    readonly callId: string,
    readonly fn: string,
    readonly digest: string,
    readonly reg: RegisteredFunction,
    /**
     * Fires on cancel, lease expiry and shutdown at any stage, and on timeout once the execution budget
     * runs (it starts after consent, so a prompt never sees a timeout reason).
     */
    readonly ab: CallAbort,
  ) {
    this.times = { callId, fn, acceptedAt: new Date().toISOString(), startedAt: null };
  }

  /**
   * Enters `state`: journalled (the call's accept, if it is not in the journal yet: entering `running`
   * directly is one write), then its note (§6.2). `running` takes its time from `times.startedAt`, which the
   * caller sets. Rejects with `JournalFault` when the accept could not be written (the call must not run).
   */
  async enter(state: LiveState): Promise<void> {
    if (!NEXT[this.at].includes(state)) throw new Error(`call ${this.callId}: ${this.at} cannot be followed by ${state}`);
    const t = this.times;
    const startedAt = state === 'running' ? (t.startedAt ??= new Date().toISOString()) : null;
    if (!this.journalled) {
      // The table lets only `accepted` and `running` come first.
      this.journalled = true;
      try {
        await this.desk.journal.accept(this.callId, this.fn, this.digest, t.acceptedAt, state === 'running' ? 'running' : 'accepted', startedAt);
      } catch (e) {
        throw new JournalFault(e);
      }
      this.note('accepted', t.acceptedAt);
      if (state === 'accepted') return;
    } else {
      await this.desk.journal.setState(this.callId, state, startedAt ?? undefined);
    }
    this.note(state, startedAt ?? new Date().toISOString());
  }

  /**
   * The call ended with `outcome` (`json` is its JSON, made once): journalled through the outbox, which
   * decides whether it counts as delivered, then its notes are ended. A call that ends before it was
   * journalled (refused by policy, cancelled during the decision) is journalled now, with its outcome.
   * Never rejects: a failed outcome write is logged on `log` (the call's).
   */
  async end(outcome: Outcome, json: string, log: Pick<Logger, 'error'>): Promise<void> {
    try {
      if (!this.journalled) {
        this.journalled = true;
        // Its failure shows in the outcome's write, which follows it in the same commit.
        this.desk.journal.accept(this.callId, this.fn, this.digest, this.times.acceptedAt, 'accepted', null).catch(ignore);
      }
      await this.desk.outbox.finish(outcome, json);
    } catch (e) {
      log.error({ err: String(e) }, 'journal write of the outcome failed');
    }
    this.state = outcome.state;
    this.desk.notes.end(this, outcome.state, outcome.finished_at ?? new Date().toISOString(), this.times.acceptedAt);
  }

  /** Whether the call has entered a state yet (and so is in the journal). */
  get entered(): boolean {
    return this.at !== 'new';
  }

  private note(state: LiveState, at: string): void {
    this.at = state;
    this.state = state;
    this.desk.notes.enter(this, state, at);
  }
}
