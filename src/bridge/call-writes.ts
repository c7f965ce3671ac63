/**
 * The single-process bridge's write-behind for call records: every write of one event-loop turn goes
 * into one SQLite transaction at its end (a `GroupCommit`, `src/storage/group-commit.ts`), because a
 * commit costs far more than a row (issue 21: two commits per call were most of the bridge's cost).
 *
 * The order of the guarantees: a new call is committed before it is forwarded and before the runtime hears
 * of it; an outcome is committed before anyone is told (SSE, `wait`, the record) and before a `call.report`
 * is acknowledged. Non-terminal states ride along; a restart can lose at most the last turn's timeline
 * entries of a running call, never a call or its outcome.
 *
 * What a call's life means (which outcome wins, who is told what) is the router's (`calls.ts`); this unit
 * only holds what the turn wrote until it is committed, and hands back what was committed.
 */
import type { Logger } from '../base/logger.js';
import { GroupCommit } from '../storage/group-commit.js';
import type { BridgeStore, StoredCall } from './store.js';
import type { Applied, PendingOutcome } from './call-lifecycle.js';

/** One write of a turn: a new record, a changed record, a taken outcome, or a retry of unsaved outcomes. */
type CallWrite = { kind: 'insert' | 'state' | 'outcome'; call: StoredCall } | { kind: 'retry' };

/** What the router does around a commit. */
export interface CallWriteHooks {
  /** Applies a taken outcome to its record, just before the commit; says how, or false when it changes nothing. */
  apply(call: StoredCall, p: PendingOutcome): Applied | false;
  /** After a commit: the new calls it saved (to forward) and the outcomes it saved (to announce). */
  committed(inserted: readonly StoredCall[], applied: ReadonlyMap<StoredCall, Applied>): void;
  /** A commit failed: the new calls it held were never saved (their submitters get the error). */
  lost(inserted: readonly StoredCall[]): void;
}

/** The most writes one transaction holds (a turn with more commits them in several, in order). */
const MAX_BATCH = 4096;
/** After a failed commit, outcomes it held are saved again this much later (or with the next commit). */
const RETRY_MS = 1000;

/** The turn's call writes, committed together at its end. */
export class CallWrites {
  private readonly group: GroupCommit<CallWrite>;
  /** Outcomes taken and not yet committed (by call, so a second one is judged against the first). */
  private readonly finishing = new Map<StoredCall, PendingOutcome>();
  /**
   * Finished calls (read from the store) that take a device outcome this turn, by `workspace/call_id`: the
   * one copy every lookup sees until it is committed, so two answers of one turn are judged against each other.
   */
  private readonly resolving = new Map<string, StoredCall>();
  /** Outcomes whose commit failed: saved (and only then announced) with the next commit. */
  private unsaved = new Map<StoredCall, Applied>();
  /** What the commit in progress saved, for its `committed` hook. */
  private done: { inserted: StoredCall[]; applied: Map<StoredCall, Applied> } | undefined;
  private closed = false;

  constructor(
    private readonly store: BridgeStore,
    private readonly log: Logger,
    private readonly hooks: CallWriteHooks,
  ) {
    this.group = new GroupCommit<CallWrite>({
      commit: (batch) => this.commit(batch),
      timing: () => 'turn',
      maxBatch: MAX_BATCH,
      onWritten: () => {
        const done = this.done;
        this.done = undefined;
        if (done) this.hooks.committed(done.inserted, done.applied);
      },
      closedError: () => new Error('the bridge is stopping'),
    });
  }

  /** Queues a new call's record; resolves once it is committed (rejects if the commit failed). */
  insert(call: StoredCall): Promise<void> {
    return this.group.write({ kind: 'insert', call });
  }

  /** The record changed (a state, a session event, `sent`): saved with this turn's commit. */
  changed(call: StoredCall): void {
    if (!this.closed) this.group.push({ kind: 'state', call });
  }

  /**
   * Takes a terminal outcome the router has judged: applied and committed at the end of the turn, then
   * announced. `resolving`: the call is a finished one read from the store (not a live record).
   */
  outcome(call: StoredCall, p: PendingOutcome, resolving: boolean): void {
    if (this.closed) return;
    const had = this.finishing.has(call);
    this.finishing.set(call, p);
    if (resolving) this.resolving.set(key(call), call);
    // One write per call and turn: a second outcome replaces the first before it is applied.
    if (!had) this.group.push({ kind: 'outcome', call });
  }

  /** The outcome taken this turn and not yet committed, if any. */
  pendingOutcome(call: StoredCall): PendingOutcome | undefined {
    return this.finishing.get(call);
  }

  /** A finished call taking a device outcome this turn, by workspace and call id. */
  resolvingCall(workspaceId: string, callId: string): StoredCall | undefined {
    return this.resolving.size ? this.resolving.get(`${workspaceId}/${callId}`) : undefined;
  }

  /** True while writes wait for their commit. */
  get pending(): boolean {
    return this.group.pending;
  }

  /** Resolves once every write queued so far is committed; rejects if that commit failed. */
  settled(): Promise<void> {
    return this.group.settled();
  }

  /** Commits what is queued now, then takes no more writes. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.group.close();
    } catch {
      // Logged by the commit; its writers were told.
    }
  }

  /** One transaction: the turn's new calls, changed records and outcomes (applied now); throws when it failed. */
  private commit(batch: readonly CallWrite[]): void {
    const inserted: StoredCall[] = [];
    const changed = new Set<StoredCall>();
    const applied = this.unsaved;
    this.unsaved = new Map();
    for (const w of batch) {
      if (w.kind === 'insert') inserted.push(w.call);
      else if (w.kind === 'state') changed.add(w.call);
      else if (w.kind === 'outcome') {
        const p = this.finishing.get(w.call);
        if (!p) continue;
        this.finishing.delete(w.call);
        this.resolving.delete(key(w.call));
        const how = this.hooks.apply(w.call, p);
        if (how) applied.set(w.call, how);
      }
    }
    const states = [...changed].filter((c) => !c.outcome);
    try {
      this.store.transaction(() => {
        for (const c of inserted) this.store.insertCall(c);
        for (const c of states) this.store.saveCall(c);
        for (const c of applied.keys()) this.store.saveCall(c);
      });
    } catch (e) {
      this.log.error({ err: String(e) }, 'could not save calls');
      // A call that was never saved is never sent (its submitter gets the error). An outcome that was not
      // saved is told to no one and saved again a second later (a call.report is not acknowledged meanwhile).
      this.hooks.lost(inserted);
      this.unsaved = applied;
      if (applied.size) setTimeout(() => this.retry(), RETRY_MS).unref();
      throw e;
    }
    this.done = { inserted, applied };
  }

  private retry(): void {
    if (!this.closed && this.unsaved.size) this.group.push({ kind: 'retry' });
  }
}

function key(call: StoredCall): string {
  return `${call.workspace_id}/${call.call_id}`;
}
