/**
 * The call path on the device (PROTOCOL.md §5, §6), as one accepted call's life: admission (§6.1's
 * checks, `admission.ts`), then resources and consent, one start path (locks, a concurrency slot, the
 * journal's accept), execution (`execution.ts`), the outcome serialized once, journalled and handed to
 * the outbox (`outbox.ts`). Aborts are `abort.ts`, state notes `state-notes.ts`, progress `progress.ts`.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RPC, RpcError, WireError } from '../protocol/errors.js';
import { PreSerialized, tooLong } from '../protocol/peer.js';
import { isTerminal, type Descriptor, type CancelParams, type InvokeParams, type Outcome, type CallStatus, type CallListParams } from '../protocol/messages.js';
import type { BlobClient, Progress } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';
import type { GrantStore } from '../grants/grant-store.js';
import { TempArea } from '../sdk/temp.js';
import { functionWordKeys } from '../sdk/function-words.js';
import { coreMessage, strings, type Locale } from '../i18n/index.js';
import type { Journal } from './journal.js';
import { callLineWriter, type CallLineWriter } from '../base/logger.js';
import { DeadlineWheel } from '../base/deadline-wheel.js';
import { LockAbortedError, LockManager, Semaphore } from './locks.js';
import { errorOutcome, preAcceptOutcome } from '../protocol/outcomes.js';
import type { FunctionRegistry } from './registry.js';
import { resourceScope, type CallObserver, type ConsentGate, type ConsentRequest, type ConsentResource } from '../seams/call-seams.js';
import { AbortReason, CallAbort, abortedBeforeStart, pausedBeforeStart, type AbortKind } from './abort.js';
import { admit, type AdmissionOptions, type Identity } from './admission.js';
import { CallLogger, execute, type ExecutionEnv } from './execution.js';
import { Call, JournalFault, type CallDesk } from './call/call.js';
import { Outbox } from './outbox.js';
import { ProgressThrottle } from './progress.js';
import { resolveResources, type Resolved } from './resource-check.js';
import { StateNotes, type NoteClock } from './state-notes.js';
import { releaseOptimiser } from '../base/optimiser.js';

export type { Identity } from './admission.js';

export interface DispatcherOptions {
  identity: Identity;
  registry: FunctionRegistry;
  /** The live grants every call's resources are checked against before consent (default: none). */
  grants?: GrantStore;
  /**
   * True for a built-in handler's functions: only they see the grants in `resources()`; a third-party
   * adapter's resources are still checked, by id, but it is never shown what the user shared.
   */
  seesGrants?: (source: string) => boolean;
  journal: Journal;
  /** Delivery of outcomes (default: one with no session, so every outcome waits for `call.report`). */
  outbox?: Outbox;
  consent: ConsentGate;
  observers?: CallObserver[];
  blobs: BlobClient;
  /** Where calls' temp files go (ctx.tempFile/tempDir); default a folder under the OS temp dir. */
  temp?: TempArea;
  /** The language of prompt sentences (default en). */
  locale?: Locale;
  log: Logger;
  maxConcurrentCalls: number;
  dedupeRetentionS: number;
  defaultConfirmTimeoutMs: number;
  /** Largest output (serialized) that fits in a frame. */
  maxOutputBytes: number;
  /** Sends a notification to the bridge, if connected. */
  notify(method: string, params: unknown): void;
  /** True while the bridge session speaks 1.1: state notes are coalesced (§6.2). Default: never (1.0). */
  coalesceNotes?: () => boolean;
  /** The state notes' clock and flush (tests drive the 10 ms window with a manual one). */
  noteClock?: NoteClock;
  /** How long a finished call's book-keeping waits (default BOOKKEEPING_DELAY_MS; tests hold it or shorten it). */
  bookkeepingDelayMs?: number;
}

/**
 * How long a finished call's book-keeping (log line, audit row, metrics) may wait, so that a burst's or
 * a run of sequential calls' is done together, off the calls' path. The audit trail batches its commits
 * over 25 ms (AUDIT_BATCH_MS) anyway.
 */
export const BOOKKEEPING_DELAY_MS = 10;

/** Dispatches device calls. One instance per agent. */
export class Dispatcher {
  private readonly inflight = new Map<string, Call>();
  private readonly locks = new LockManager();
  private readonly slots: Semaphore;
  private accepting = true;
  private pendingJobs: (() => void)[] = [];
  /** Runs the queued book-keeping; cleared by an earlier flush. */
  private bookkeepingTimer: NodeJS.Timeout | undefined;
  private readonly admission: AdmissionOptions;
  /** The journal, state notes and outbox every call writes to (`Call.enter`, `Call.end`). */
  private readonly desk: CallDesk;
  private readonly exec: ExecutionEnv;
  /** Every started call's execution budget, on one timer (no timer or closure per call). */
  private readonly deadlines = new DeadlineWheel<Call>((call) => this.abort(call, 'timeout'));

  /** Where the one line per finished call goes (its fields are fixed: no redaction pass). */
  private readonly callLine: CallLineWriter;

  constructor(private readonly o: DispatcherOptions) {
    this.slots = new Semaphore(o.maxConcurrentCalls);
    this.callLine = callLineWriter(o.log);
    this.admission = {
      identity: o.identity,
      registry: o.registry,
      consent: o.consent,
      journal: o.journal,
      dedupeRetentionS: o.dedupeRetentionS,
      live: (id) => this.inflight.get(id),
      accepting: () => this.accepting,
    };
    const coalesce = o.coalesceNotes ?? (() => false);
    this.desk = {
      journal: o.journal,
      notes: new StateNotes({ send: (note) => o.notify('aios/notification.call_state', note), coalesce, ...(o.noteClock ? { clock: o.noteClock } : {}) }),
      outbox: o.outbox ?? new Outbox({ store: o.journal, log: o.log }),
    };
    this.exec = { blobs: o.blobs, temp: () => this.tempArea(), progress: (call, pr) => this.progress(call, pr) };
  }

  /** Number of calls not yet terminal. */
  get activeCount(): number {
    return this.inflight.size;
  }

  /** `aios/function.invoke`. Always resolves with an outcome (§2 layer 3). */
  async invoke(p: InvokeParams): Promise<Outcome> {
    const a = await this.answer(p);
    return a instanceof PreSerialized ? a.value : a;
  }

  /**
   * `aios/function.invoke` for the wire: a freshly run call's outcome comes with its JSON (made once, for
   * the size check and the journal), which the peer sends as is. A call refused or replayed at admission
   * is answered at once (no promise).
   */
  answer(p: InvokeParams): Outcome | Promise<Outcome | PreSerialized<Outcome>> {
    releaseOptimiser();
    const a = admit(this.admission, p);
    switch (a.kind) {
      case 'refused':
        this.afterAnswer(() => {
          this.logCall(a.outcome);
          this.observe(a.outcome, a.descriptor, p);
        });
        return a.outcome;
      case 'replay':
        return a.outcome;
      case 'attach':
        return a.call.promise.then((o) => ({ ...o.value, replayed: true }));
      default:
        break;
    }
    const call = new Call(this.desk, p.call_id, p.function, a.digest, a.reg, new CallAbort());
    // Registered before the first await, so a duplicate arriving meanwhile attaches to this call; `run`
    // removes it when the call ends.
    this.inflight.set(p.call_id, call);
    call.promise = this.run(call, p);
    return call.promise;
  }

  /** `aios/function.cancel` (§6.5). */
  async cancel(p: CancelParams): Promise<Outcome> {
    const call = this.inflight.get(p.call_id);
    if (call) {
      if (call.state === 'running' && (call.committed || !call.reg.descriptor.cancellable)) {
        throw new WireError('not_cancellable', 'The call is past its point of no return.');
      }
      this.abort(call, 'cancel');
      return (await call.promise).value;
    }
    const row = this.o.journal.get(p.call_id);
    if (row?.outcome) return row.outcome;
    if (row) throw new RpcError(RPC.internal_error, 'The call is journalled but not running.');
    const now = new Date().toISOString();
    const tomb: Outcome = {
      call_id: p.call_id,
      function: '',
      state: 'cancelled',
      error: new WireError('cancelled', 'The call was cancelled before it arrived.').toCallError(),
      replayed: false,
      accepted_at: null,
      started_at: null,
      finished_at: now,
      duration_ms: null,
    };
    await this.o.journal.tombstone(p.call_id, tomb);
    return tomb;
  }

  /** `aios/call.get` (§6.7). */
  get(callId: string): Outcome | CallStatus {
    const call = this.inflight.get(callId);
    if (call) return { call_id: callId, state: call.state };
    const row = this.o.journal.get(callId);
    if (!row) throw new RpcError(RPC.invalid_params, 'Unknown call_id.', { call_id: callId });
    return row.outcome ?? { call_id: callId, state: row.state };
  }

  /** `aios/call.list` (§6.7). */
  list(p: CallListParams): { calls: (Outcome | CallStatus)[]; next_cursor?: string } {
    let cursor: { ms: number; id: string } | undefined;
    if (p.cursor) {
      try {
        cursor = JSON.parse(Buffer.from(p.cursor, 'base64url').toString()) as { ms: number; id: string };
      } catch {
        throw new RpcError(RPC.invalid_params, 'Invalid cursor.');
      }
    }
    const opts: Parameters<Journal['list']>[0] = { limit: p.limit ?? 100 };
    if (p.since) opts.sinceMs = Date.parse(p.since);
    if (p.states) opts.states = p.states;
    if (cursor) opts.cursor = cursor;
    const { rows, next } = this.o.journal.list(opts);
    const calls = rows.map((r) => {
      const live = this.inflight.get(r.callId);
      if (live) return { call_id: r.callId, state: live.state };
      return r.outcome ?? { call_id: r.callId, state: r.state };
    });
    return { calls, ...(next ? { next_cursor: Buffer.from(JSON.stringify(next)).toString('base64url') } : {}) };
  }

  /** Aborts cancellable running calls because the bridge lease expired (§3.3). */
  expireLease(): number {
    let n = 0;
    for (const call of this.inflight.values()) {
      if (call.state === 'running' && (call.committed || !call.reg.descriptor.cancellable)) continue;
      this.abort(call, 'lease');
      n++;
    }
    return n;
  }

  /**
   * The user paused the agent: every call whose handler has not started (resolving its resources, waiting
   * for consent, a lock or a slot) ends `rejected/paused` with `side_effects: none` now, not when its wait
   * ends. Running calls are left to their handlers' `onPause`. Returns how many were stopped.
   */
  pauseWaiting(): number {
    let n = 0;
    for (const call of this.inflight.values()) {
      if (call.times.startedAt !== null || call.handlerRunning || isTerminal(call.state)) continue;
      this.abort(call, 'pause');
      n++;
    }
    return n;
  }

  /** Stops accepting calls, aborts everything and waits (bounded) for outcomes to be journalled. */
  async shutdown(): Promise<void> {
    this.accepting = false;
    const all = [...this.inflight.values()];
    for (const c of all) this.abort(c, 'shutdown');
    await Promise.allSettled(all.map((c) => c.promise));
    this.flushBookkeeping();
  }

  private observe(outcome: Outcome, descriptor: Descriptor | undefined, p: InvokeParams, resources?: readonly ConsentResource[]): void {
    for (const obs of this.o.observers ?? []) {
      try {
        obs.onFinished({ outcome, descriptor, args: descriptor ? p.arguments : undefined, requester: p.requester, runtime: p.runtime, workspaceId: p.workspace_id, userId: p.user_id, ...(resources ? { resources } : {}) });
      } catch (e) {
        this.o.log.error({ err: String(e) }, 'call observer failed');
      }
    }
  }

  /** Fires the call's signal (once) and wakes its execution if it is waiting on the handler. */
  private abort(call: Call, kind: AbortKind): void {
    if (call.ab.aborted) return;
    call.ab.abort(new AbortReason(kind));
    call.wake?.();
  }

  /** The accepted call's life, to its outcome: serialized once, journalled, its notes ended, its book-keeping queued. */
  private async run(call: Call, p: InvokeParams): Promise<PreSerialized<Outcome>> {
    try {
      const log = new CallLogger(this.o.log, call.callId, call.fn);
      const d = call.reg.descriptor;
      let outcome: Outcome;
      try {
        outcome = await this.lifecycle(call, p, log);
      } catch (e) {
        if (e instanceof JournalFault) {
          log.error({ err: String(e.cause) }, 'journal write failed; call not accepted');
          const refused = preAcceptOutcome(call.callId, call.fn, 'failed', new WireError('execution_failed', 'The device could not journal the call, so it did not run.', { retryable: true }));
          return new PreSerialized(refused, JSON.stringify(refused));
        }
        log.error({ err: String(e) }, 'call path fault');
        outcome = errorOutcome(call.times, 'failed', 'execution_failed', 'The device client failed while handling the call.', call.handlerRunning ? 'possible' : 'none');
      }
      call.progress?.stop();
      // The outcome is serialized once: for the size check, the journal and the response frame.
      let json = JSON.stringify(outcome);
      if (outcome.state === 'completed' && tooLong(json, this.o.maxOutputBytes)) {
        outcome = errorOutcome(call.times, 'failed', 'payload_too_large', 'The output is larger than a message may be; the function should return a blob.', d.risk?.read_only ? 'none' : 'possible', { limit: this.o.maxOutputBytes, size: Buffer.byteLength(json) });
        json = JSON.stringify(outcome);
      }
      await call.end(outcome, json, log);
      this.afterAnswer(() => {
        this.logCall(outcome);
        this.observe(outcome, d, p, call.resources);
      });
      return new PreSerialized(outcome, json);
    } finally {
      // The call is no longer live: a duplicate now finds its outcome in the journal.
      this.inflight.delete(call.callId);
    }
  }

  /**
   * The one log line of every call the device answered, run or refused before it was accepted (at
   * validation, identity, a pause): its id, function, state, duration and error type, never its arguments.
   * On the parent logger: building a child logger per call costs more than the line.
   */
  private logCall(outcome: Outcome): void {
    const ok = outcome.state === 'completed' || outcome.state === 'cancelled';
    const line = { call_id: outcome.call_id, function: outcome.function, state: outcome.state, duration_ms: outcome.duration_ms, ...(ok ? {} : { error_type: outcome.error?.type }) };
    this.callLine(ok ? 'info' : 'warn', line, 'call finished');
  }

  /**
   * Book-keeping of a finished call (its log line, the audit row, metrics) that its answer need not
   * wait for: queued, and run together BOOKKEEPING_DELAY_MS after the first of them (and at shutdown).
   * Run in the turn after each answer, its code (logger, redaction, audit, metrics) pushed the call
   * path's out of the caches before the next call arrived: one call in flight took 4–19 % longer
   * (docs/performance.md, "The book-keeping, deferred"). The frames of every call queued here have
   * left before it runs.
   */
  private afterAnswer(job: () => void): void {
    this.pendingJobs.push(job);
    this.bookkeepingTimer ??= setTimeout(() => this.flushBookkeeping(), this.o.bookkeepingDelayMs ?? BOOKKEEPING_DELAY_MS);
  }

  /**
   * Runs the book-keeping queued by `afterAnswer` now: on its timer, at shutdown (nothing is lost), and
   * before a `/metrics` scrape or an activity list (they then count every call answered).
   */
  flushBookkeeping(): void {
    clearTimeout(this.bookkeepingTimer);
    this.bookkeepingTimer = undefined;
    const jobs = this.pendingJobs;
    if (!jobs.length) return;
    this.pendingJobs = [];
    for (const job of jobs) {
      try {
        job();
      } catch (e) {
        this.o.log.error({ err: String(e) }, 'book-keeping of a finished call failed');
      }
    }
  }

  /** Resources, then consent (a prompt journals the call first), then the start. */
  private async lifecycle(call: Call, p: InvokeParams, log: Logger): Promise<Outcome> {
    const d = call.reg.descriptor;
    const def = call.reg.def;
    const t = call.times;
    const args = p.arguments;

    // The first half of the policy step (§6.1): the resources the call touches, checked against the
    // grants. A refusal here is final and journalled like any outcome; nobody is asked.
    let resolved: Resolved;
    try {
      // Most functions declare no resources(): nothing to wait for, the descriptor's locks are the call's.
      resolved = def.resources ? await resolveResources(call.reg, args, this.o.grants, this.o.seesGrants?.(call.reg.source) !== false) : { resources: [], locks: d.locks };
    } catch (e) {
      const err = e instanceof WireError ? e : new WireError('execution_failed', 'The function could not work out what this call touches.');
      if (!(e instanceof WireError)) log.error({ err: String(e) }, 'resources() threw an unexpected error');
      const refused = err.type === 'permission_denied' || err.type === 'invalid_arguments';
      return errorOutcome(t, refused ? 'rejected' : 'failed', err.type, err.message, 'none', err.details, err.retryable);
    }
    call.resources = resolved.resources;

    const req: { -readonly [K in keyof ConsentRequest]: ConsentRequest[K] } = {
      callId: call.callId,
      descriptor: d,
      args,
      summary: '',
      resource: resourceScope(resolved.resources),
      resources: resolved.resources,
      requester: p.requester,
      runtime: p.runtime,
      workspaceId: p.workspace_id,
      userId: p.user_id,
      timeoutMs: p.confirm_timeout_ms ?? this.o.defaultConfirmTimeoutMs,
    };
    // Most calls need nobody to be asked: their decision is made here and now.
    let decision = this.o.consent.decideNow(req);
    if (!decision) {
      // The user will be asked: journal the call first, then describe it in one sentence.
      await call.enter('accepted');
      const locale = this.o.locale ?? 'en';
      const titleKey = functionWordKeys(d.id, call.reg.source)?.title;
      if (titleKey) req.titleKey = titleKey;
      // The generic sentence names the function by its title when its catalogue has one.
      const generic = coreMessage('core.call.generic', { name: titleKey ? { key: titleKey } : d.name });
      req.summary = strings.render(generic, locale);
      req.said = generic;
      if (def.describe) {
        try {
          const said = await def.describe(args, resolved.resources);
          req.summary = typeof said === 'string' ? said : strings.render(said, locale);
          // Keys travel to every surface, which renders them in its own language; a plain string is the adapter's own words.
          req.said = typeof said === 'string' ? undefined : said;
          req.ownWords = typeof said === 'string';
        } catch (e) {
          log.debug({ err: String(e) }, 'describe() failed; using a generic sentence');
        }
      }
      await call.enter('awaiting_confirmation');
      const early = abortedBeforeStart(t, call.ab);
      if (early) return early;
      decision = await this.o.consent.decide(req, call.ab.signal);
    }
    t.confirmation = decision.confirmation;
    const afterPrompt = abortedBeforeStart(t, call.ab);
    if (afterPrompt) return afterPrompt;
    if (decision.error) {
      const e = decision.error;
      return errorOutcome(t, 'rejected', e.type, e.message, 'none', e.details, e.retryable);
    }
    // Paused while the user was being asked: the answer does not start the call.
    if (this.o.consent.isPaused()) return pausedBeforeStart(t);
    // Awaited here, not returned: a promise returned from an async function costs another promise and two ticks.
    return await this.start(call, resolved.locks, Math.min(p.timeout_ms ?? d.timeout_ms_default, d.timeout_ms_max), args, p.requester, log);
  }

  /**
   * The one start path: the execution budget starts (it covers lock and slot waits, §6.4), the locks and
   * a concurrency slot are taken, the call enters `running` in the journal, the handler runs. A call
   * not journalled yet whose locks are free is journalled directly as `running` once it has its slot
   * (one write; the short slot wait is not journalled: a crash during it only makes the bridge re-send);
   * one that must wait for a lock is journalled as `accepted` first.
   */
  private async start(call: Call, lockNames: readonly string[], timeoutMs: number, args: Record<string, unknown>, requester: InvokeParams['requester'], log: Logger): Promise<Outcome> {
    const t = call.times;
    call.budgetMs = timeoutMs;
    const deadline = this.deadlines.add(call, timeoutMs);
    let release = this.locks.tryAcquireAll(lockNames);
    let releaseSlot: (() => void) | undefined;
    try {
      if (!release) {
        if (!call.entered) await call.enter('accepted');
        try {
          release = await this.locks.acquireAll(lockNames, call.ab);
        } catch (e) {
          if (!(e instanceof LockAbortedError)) throw e;
          return abortedBeforeStart(t, call.ab) ?? errorOutcome(t, 'expired', 'device_busy', 'The resource stayed busy with another call past this call\'s deadline.', 'none', { locks: lockNames });
        }
      }
      releaseSlot = this.slots.tryAcquire();
      if (!releaseSlot) {
        try {
          releaseSlot = await this.slots.acquire(call.ab);
        } catch (e) {
          if (!(e instanceof LockAbortedError)) throw e;
          return abortedBeforeStart(t, call.ab) ?? errorOutcome(t, 'expired', 'device_busy', 'No execution slot came free before this call\'s deadline.', 'none');
        }
      }
      // Pause is checked again after every wait (issue 27, finding 5): a call that waited for a lock or
      // a slot across a pause does not start after it.
      if (this.o.consent.isPaused()) return pausedBeforeStart(t);
      t.startedAt = new Date().toISOString();
      await call.enter('running');
      if (call.ab.aborted) {
        return abortedBeforeStart(t, call.ab) ?? errorOutcome(t, 'expired', 'device_busy', 'The call could not start before its deadline.', 'none');
      }
      return await execute(this.exec, call, args, requester, log);
    } finally {
      this.deadlines.delete(call, deadline);
      releaseSlot?.();
      release?.();
    }
  }

  private fallbackTemp: TempArea | undefined;

  /** The temp area: the configured one, else (unit tests) a private folder under the OS temp dir. */
  private tempArea(): TempArea {
    if (this.o.temp) return this.o.temp;
    this.fallbackTemp ??= new TempArea(join(tmpdir(), `aios-device-calls-${process.pid}`));
    return this.fallbackTemp;
  }

  /** A handler's progress report: throttled per call (made on its first report). */
  private progress(call: Call, pr: Progress): void {
    if (isTerminal(call.state)) return;
    call.progress ??= new ProgressThrottle(call.callId, (note) => this.o.notify('aios/notification.progress', note), () => isTerminal(call.state));
    call.progress.report(pr);
  }
}
