/**
 * The call path on the device (PROTOCOL.md §5, §6): checks in the order of §6.1, the journal,
 * consent, locks, execution with timeouts and cancellation, output validation, outcome.
 * Handler errors are mapped to wire errors here and only here.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { argsDigest } from '../protocol/hash.js';
import { ijsonViolation } from '../protocol/ijson.js';
import { RPC, RpcError, WireError, isCancellation, type SideEffects } from '../protocol/errors.js';
import { serializedResults, tooLong } from '../protocol/peer.js';
import { isTerminal, type Descriptor, type CallState, type CallStateNote, type CancelParams, type InvokeParams, type Outcome, type ProgressNote, type CallStatus, type CallListParams } from '../protocol/messages.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import { NO_GRANTS, type BlobClient, type CallContext, type CallResource, type Logger, type Progress } from '../sdk/index.js';
import type { GrantStore } from '../grants/grant-store.js';
import { TempArea } from '../sdk/temp.js';
import { coreMessage, strings, type Locale } from '../i18n/index.js';
import type { Journal } from './journal.js';
import { callLineWriter, type CallLineWriter } from '../base/logger.js';
import { LockAbortedError, LockManager, Semaphore, type AbortLike } from './locks.js';
import { errorOutcome, finalOutcome, preAcceptOutcome, uuidv7Time, type CallTimes } from '../protocol/outcomes.js';
import type { FunctionRegistry, RegisteredFunction } from './registry.js';
import { resourceScope, type CallObserver, type ConsentGate, type ConsentRequest, type ConsentResource } from '../seams/call-seams.js';

/** How long a handler gets to stop after its signal fires before the call is answered anyway (§6.5). */
export const ABORT_GRACE_MS = 5000;
const PROGRESS_INTERVAL_MS = 100;

/** The identity this dispatcher serves. */
export interface Identity {
  workspaceId: string;
  userId: string;
  deviceId: string;
}

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
  /** True when an outcome can go back as the invoke's response now (else it waits in the outbox). */
  deliverable(): boolean;
}

type AbortKind = 'cancel' | 'timeout' | 'shutdown' | 'lease';

class AbortReason extends Error {
  constructor(readonly kind: AbortKind) {
    super(kind);
    this.name = 'AbortError';
  }
}

/**
 * A call's abort state. The dispatcher's own waits listen here; a real AbortSignal is made only when
 * something asks for one (a handler reading `ctx.signal`, a prompt): most calls never need it.
 */
class CallAbort implements AbortLike {
  aborted = false;
  reason: AbortReason | undefined;
  private listeners: (() => void)[] | undefined;
  private ctl: AbortController | undefined;

  get signal(): AbortSignal {
    if (!this.ctl) {
      this.ctl = new AbortController();
      if (this.aborted) this.ctl.abort(this.reason);
    }
    return this.ctl.signal;
  }

  abort(reason: AbortReason): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.ctl?.abort(reason);
    const ls = this.listeners;
    this.listeners = undefined;
    if (ls) for (const l of ls) l();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners ? this.listeners.indexOf(listener) : -1;
    if (i >= 0) this.listeners!.splice(i, 1);
  }
}

/** A call's resources as checked before consent, and the lock keys they give. */
interface Resolved {
  resources: ConsentResource[];
  locks: readonly string[];
}

/** The journal could not take the call: it must not run. */
class JournalFault extends Error {
  constructor(override readonly cause: unknown) {
    super('journal write failed');
  }
}

interface InFlight {
  callId: string;
  /** The resources the call touches, once resolved (for the audit row: the names people know them by). */
  resources?: readonly ConsentResource[];
  /** The accept is queued in (or committed to) the journal. */
  journalled: boolean;
  /** The `accepted` notification went out. */
  announced: boolean;
  fn: string;
  digest: string;
  reg: RegisteredFunction;
  state: CallState;
  seq: number;
  /** This call's execution budget (its `timeout_ms`, capped), once it has started: the timeout message names it. */
  budgetMs?: number;
  /**
   * Fires on cancel, lease expiry and shutdown at any stage, and on timeout once the execution budget
   * runs (it starts after consent, so a prompt never sees a timeout reason).
   */
  ab: CallAbort;
  committed: boolean;
  handlerRunning: boolean;
  /** Set while `execute` waits for the handler: wakes it when the call is aborted. */
  wake: (() => void) | undefined;
  promise: Promise<Outcome>;
  times: CallTimes;
  lastProgress: number;
  progressTimer: NodeJS.Timeout | undefined;
  pendingProgress: Progress | undefined;
  progressSeq: number;
}

/** Dispatches device calls. One instance per agent. */
export class Dispatcher {
  private readonly inflight = new Map<string, InFlight>();
  private readonly locks = new LockManager();
  private readonly slots: Semaphore;
  private accepting = true;
  private pendingJobs: (() => void)[] = [];

  /** Where the one line per finished call goes (its fields are fixed: no redaction pass). */
  private readonly callLine: CallLineWriter;

  constructor(private readonly o: DispatcherOptions) {
    this.slots = new Semaphore(o.maxConcurrentCalls);
    this.callLine = callLineWriter(o.log);
  }

  /** Number of calls not yet terminal. */
  get activeCount(): number {
    return this.inflight.size;
  }

  /** `aios/function.invoke`. Always resolves with an outcome (§2 layer 3). */
  async invoke(p: InvokeParams): Promise<Outcome> {
    const id = this.o.identity;
    const reg = this.o.registry.get(p.function);
    if (p.workspace_id !== id.workspaceId || p.user_id !== id.userId || p.device_id !== id.deviceId) {
      return this.refuse(p, reg, 'failed', new WireError('identity_mismatch', 'The workspace, user or device of this call is not this client\'s.'));
    }
    if (!reg || this.o.consent.isDisabled(p.function)) {
      return this.refuse(p, reg, 'failed', new WireError('unknown_function', `No enabled function is registered as ${p.function}.`));
    }
    if (p.descriptor_hash !== undefined && p.descriptor_hash !== reg.descriptor.descriptor_hash) {
      return this.refuse(p, reg, 'failed', new WireError('function_changed', 'The function\'s descriptor has changed since the caller read it.', { details: { descriptor_hash: reg.descriptor.descriptor_hash } }));
    }
    const notIJson = ijsonViolation(p.arguments);
    if (notIJson) return this.refuse(p, reg, 'failed', new WireError('invalid_arguments', 'The arguments are not I-JSON or nest too deep.', { details: { violations: [notIJson] } }));
    const violations = schemaValidator.validate(reg.descriptor.input_schema, p.arguments);
    if (violations.length) {
      return this.refuse(p, reg, 'failed', new WireError('invalid_arguments', 'The arguments do not match the function\'s input schema.', { details: { violations } }));
    }

    const digest = argsDigest(p.function, p.arguments);
    const live = this.inflight.get(p.call_id);
    if (live) {
      if (live.digest !== digest) return this.refused(p, reg.descriptor, this.conflict(p));
      return live.promise.then((o) => ({ ...o, replayed: true }));
    }
    const row = this.o.journal.get(p.call_id);
    if (row) {
      if (row.tombstone && row.outcome) return { ...row.outcome, function: p.function, replayed: true };
      if (row.argsDigest !== digest) return this.refused(p, reg.descriptor, this.conflict(p));
      if (row.outcome) return { ...row.outcome, replayed: true };
      // Non-terminal without a live call happens only if recovery did not run; never re-run it.
      throw new RpcError(RPC.internal_error, 'The call is journalled but not running; ask aios/call.get.');
    }
    const minted = uuidv7Time(p.call_id);
    if (minted !== undefined && Date.now() - minted > this.o.dedupeRetentionS * 1000) {
      return this.refuse(p, reg, 'expired', new WireError('call_expired', 'The call is older than the deduplication window and was not run.'));
    }
    if (this.o.consent.isPaused()) {
      return this.refuse(p, reg, 'rejected', new WireError('paused', 'The user has paused this device client.'));
    }
    if (!this.accepting) {
      return this.refuse(p, reg, 'rejected', new WireError('paused', 'The device client is shutting down.', { retryable: true }));
    }

    const call: InFlight = {
      callId: p.call_id,
      journalled: false,
      announced: false,
      fn: p.function,
      digest,
      reg,
      state: 'accepted',
      seq: 0,
      ab: new CallAbort(),
      committed: false,
      handlerRunning: false,
      wake: undefined,
      promise: undefined as unknown as Promise<Outcome>,
      times: { callId: p.call_id, fn: p.function, acceptedAt: new Date().toISOString(), startedAt: null },
      lastProgress: 0,
      progressTimer: undefined,
      pendingProgress: undefined,
      progressSeq: 0,
    };
    // Registered before the first await, so a duplicate arriving meanwhile attaches to this call.
    this.inflight.set(p.call_id, call);
    call.promise = this.run(call, p).finally(() => this.inflight.delete(p.call_id));
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
      return call.promise;
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

  /** Stops accepting calls, aborts everything and waits (bounded) for outcomes to be journalled. */
  async shutdown(): Promise<void> {
    this.accepting = false;
    const all = [...this.inflight.values()];
    for (const c of all) this.abort(c, 'shutdown');
    await Promise.allSettled(all.map((c) => c.promise));
    this.drainJobs();
  }

  /** A call refused before acceptance: its outcome, reported to the observers (audit). */
  private refuse(p: InvokeParams, reg: RegisteredFunction | undefined, state: CallState, err: WireError): Outcome {
    return this.refused(p, reg?.descriptor, preAcceptOutcome(p.call_id, p.function, state, err));
  }

  /** Reports a call refused before acceptance to the observers (audit) once answered, and returns its outcome. */
  private refused(p: InvokeParams, descriptor: Descriptor | undefined, outcome: Outcome): Outcome {
    this.afterAnswer(() => this.observe(outcome, descriptor, p));
    return outcome;
  }

  private observe(outcome: Outcome, descriptor: Descriptor | undefined, p: InvokeParams, resources?: readonly ConsentResource[]): void {
    for (const obs of this.o.observers ?? []) {
      try {
        obs.onFinished({ outcome, descriptor, args: descriptor ? p.arguments : undefined, requester: p.requester, workspaceId: p.workspace_id, userId: p.user_id, ...(resources ? { resources } : {}) });
      } catch (e) {
        this.o.log.error({ err: String(e) }, 'call observer failed');
      }
    }
  }

  private conflict(p: InvokeParams): Outcome {
    return preAcceptOutcome(p.call_id, p.function, 'failed', new WireError('idempotency_conflict', 'This call_id was already used with a different function or arguments.'));
  }

  /** Fires the call's signal (once) and wakes its execution if it is waiting on the handler. */
  private abort(call: InFlight, kind: AbortKind): void {
    if (call.ab.aborted) return;
    call.ab.abort(new AbortReason(kind));
    call.wake?.();
  }

  /** Enters a state and tells the bridge; `at` defaults to now (callers pass the time they recorded). */
  private setState(call: InFlight, state: CallState, at?: string): void {
    if (state === 'accepted') call.announced = true;
    call.state = state;
    const note: CallStateNote = { call_id: call.callId, state, seq: call.seq++, at: at ?? new Date().toISOString() };
    this.o.notify('aios/notification.call_state', note);
  }

  private async run(call: InFlight, p: InvokeParams): Promise<Outcome> {
    const log = new CallLogger(this.o.log, call.callId, call.fn);
    const d = call.reg.descriptor;
    const args = p.arguments;
    let outcome: Outcome;
    try {
      outcome = await this.lifecycle(call, p, args, log);
    } catch (e) {
      if (e instanceof JournalFault) {
        log.error({ err: String(e.cause) }, 'journal write failed; call not accepted');
        return preAcceptOutcome(call.callId, call.fn, 'failed', new WireError('execution_failed', 'The device could not journal the call, so it did not run.', { retryable: true }));
      }
      log.error({ err: String(e) }, 'call path fault');
      outcome = errorOutcome(call.times, 'failed', 'execution_failed', 'The device client failed while handling the call.', call.handlerRunning ? 'possible' : 'none');
    }
    if (call.progressTimer) clearTimeout(call.progressTimer);
    // The outcome is serialized once: for the size check, the journal and the response frame.
    let json = JSON.stringify(outcome);
    if (outcome.state === 'completed' && tooLong(json, this.o.maxOutputBytes)) {
      outcome = errorOutcome(call.times, 'failed', 'payload_too_large', 'The output is larger than a message may be; the function should return a blob.', d.risk?.read_only ? 'none' : 'possible', { limit: this.o.maxOutputBytes, size: Buffer.byteLength(json) });
      json = JSON.stringify(outcome);
    }
    try {
      // A call that ended before it was journalled (refused by policy, cancelled during the decision) is
      // journalled now, in the same write as its outcome.
      if (!call.journalled) void this.accept(call, 'accepted', null).catch(() => undefined);
      await this.o.journal.finish(outcome, this.o.deliverable(), json);
    } catch (e) {
      log.error({ err: String(e) }, 'journal write of the outcome failed');
    }
    serializedResults.set(outcome, json);
    if (call.state === 'accepted' && !call.announced) this.setState(call, 'accepted', call.times.acceptedAt);
    this.setState(call, outcome.state, outcome.finished_at ?? undefined);
    this.afterAnswer(() => {
      // One line per call, on the parent logger: building a child logger per call costs more than the line.
      const ok = outcome.state === 'completed' || outcome.state === 'cancelled';
      const line = { call_id: call.callId, function: call.fn, state: outcome.state, duration_ms: outcome.duration_ms, ...(ok ? {} : { error_type: outcome.error?.type }) };
      this.callLine(ok ? 'info' : 'warn', line, 'call finished');
      this.observe(outcome, d, p, call.resources);
    });
    return outcome;
  }

  /**
   * Book-keeping of a finished call (its log line, the audit row, metrics) that its answer need not
   * wait for: it runs in an immediate, and at shutdown. A finished call has sent its `call_state` note
   * before this is queued, so the transport's uncork (an earlier immediate) sends its frames first; a
   * call refused before acceptance has sent nothing yet, so its row may be written before its answer
   * leaves.
   */
  private afterAnswer(job: () => void): void {
    this.pendingJobs.push(job);
    if (this.pendingJobs.length === 1) setImmediate(() => this.drainJobs());
  }

  /** Runs the book-keeping queued by `afterAnswer` (also called at shutdown, so nothing is lost). */
  private drainJobs(): void {
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

  /** Journals the accepted call (committed when the promise resolves). */
  private accept(call: InFlight, state: 'accepted' | 'running', startedAt: string | null): Promise<void> {
    call.journalled = true;
    return this.o.journal.accept(call.callId, call.fn, call.digest, call.times.acceptedAt, state, startedAt).catch((e: unknown) => {
      throw new JournalFault(e);
    });
  }

  private async lifecycle(call: InFlight, p: InvokeParams, args: Record<string, unknown>, log: Logger): Promise<Outcome> {
    const d = call.reg.descriptor;
    const def = call.reg.def;
    const t = call.times;
    const cancelledNow = (): Outcome | undefined => {
      const r = call.ab.reason;
      if (!call.ab.aborted || !r || r.kind === 'timeout') return undefined;
      if (r.kind === 'shutdown') return errorOutcome(t, 'failed', 'execution_interrupted', 'The device client stopped before this call started; it did not run.', 'none');
      return errorOutcome(t, 'cancelled', 'cancelled', r.kind === 'lease' ? 'The call was cancelled because the bridge did not come back in time.' : 'The call was cancelled.', 'none', r.kind === 'lease' ? { reason: 'lease_expired' } : undefined);
    };

    // The first half of the policy step (§6.1): the resources the call touches, checked against the
    // grants. A refusal here is final and journalled like any outcome; nobody is asked.
    let resolved: Resolved;
    try {
      resolved = await this.resolveResources(call, args);
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
      workspaceId: p.workspace_id,
      userId: p.user_id,
      timeoutMs: p.confirm_timeout_ms ?? this.o.defaultConfirmTimeoutMs,
    };
    // Most calls need nobody to be asked: their decision is made here and now.
    let decision = this.o.consent.decideNow(req);
    if (!decision) {
      // The user will be asked: journal the call first, then describe it in one sentence.
      await this.accept(call, 'accepted', null);
      this.setState(call, 'accepted', t.acceptedAt);
      const locale = this.o.locale ?? 'en';
      req.summary = strings.render(coreMessage('core.call.generic', { name: d.name }), locale);
      if (def.describe) {
        try {
          const said = await def.describe(args, resolved.resources);
          req.summary = typeof said === 'string' ? said : strings.render(said, locale);
        } catch (e) {
          log.debug({ err: String(e) }, 'describe() failed; using a generic sentence');
        }
      }
      await this.o.journal.setState(call.callId, 'awaiting_confirmation');
      this.setState(call, 'awaiting_confirmation');
      const early = cancelledNow();
      if (early) return early;
      decision = await this.o.consent.decide(req, call.ab.signal);
    }
    t.confirmation = decision.confirmation;
    const afterPrompt = cancelledNow();
    if (afterPrompt) return afterPrompt;
    if (decision.error) {
      const e = decision.error;
      return errorOutcome(t, 'rejected', e.type, e.message, 'none', e.details, e.retryable);
    }

    const lockNames = resolved.locks;
    const timeoutMs = Math.min(p.timeout_ms ?? d.timeout_ms_default, d.timeout_ms_max);
    // Fast path: when its locks are free, the call is journalled directly as running once it has a
    // concurrency slot (usually at once; otherwise after a short wait that is not journalled and that a
    // crash would only turn into a re-send). Still one commit before the handler starts.
    if (!call.journalled) {
      const held = this.locks.tryAcquireAll(lockNames);
      if (held) {
        const timer = this.startBudget(call, timeoutMs);
        let slot = this.slots.tryAcquire();
        try {
          if (!slot) {
            try {
              slot = await this.slots.acquire(call.ab);
            } catch (e) {
              if (!(e instanceof LockAbortedError)) throw e;
              return cancelledNow() ?? errorOutcome(t, 'expired', 'device_busy', 'No execution slot came free before this call\'s deadline.', 'none');
            }
          }
          t.startedAt = new Date().toISOString();
          await this.accept(call, 'running', t.startedAt);
          this.setState(call, 'accepted', t.acceptedAt);
          this.setState(call, 'running', t.startedAt);
          return await this.execute(call, args, p.requester, log);
        } finally {
          clearTimeout(timer);
          slot?.();
          held();
        }
      }
      await this.accept(call, 'accepted', null);
      this.setState(call, 'accepted', t.acceptedAt);
    }

    // Execution budget starts now and covers lock waits (§6.4).
    const timer = this.startBudget(call, timeoutMs);
    let release: (() => void) | undefined;
    let releaseSlot: (() => void) | undefined;
    try {
      try {
        release = await this.locks.acquireAll(lockNames, call.ab);
        releaseSlot = await this.slots.acquire(call.ab);
      } catch (e) {
        if (!(e instanceof LockAbortedError)) throw e;
        const c = cancelledNow();
        if (c) return c;
        return errorOutcome(t, 'expired', 'device_busy', 'The resource stayed busy with another call past this call\'s deadline.', 'none', { locks: lockNames });
      }

      t.startedAt = new Date().toISOString();
      await this.o.journal.setState(call.callId, 'running', t.startedAt);
      this.setState(call, 'running', t.startedAt);
      if (call.ab.aborted) {
        const c = cancelledNow();
        if (c) return c;
        return errorOutcome(t, 'expired', 'device_busy', 'The call could not start before its deadline.', 'none');
      }
      return await this.execute(call, args, p.requester, log);
    } finally {
      clearTimeout(timer);
      releaseSlot?.();
      release?.();
    }
  }

  /**
   * Runs the function's `resources()` and checks each resource of a declared grant kind against the
   * live grants (whatever the handler checked itself): outside every grant, or read-only for a write,
   * throws `permission_denied`. The grant's alias labels it and its `ask: always` carries over.
   */
  private async resolveResources(call: InFlight, args: Record<string, unknown>): Promise<Resolved> {
    const def = call.reg.def;
    const d = call.reg.descriptor;
    if (!def.resources) return { resources: [], locks: d.locks };
    const grants = this.o.grants && this.o.seesGrants?.(call.reg.source) !== false ? this.o.grants : NO_GRANTS;
    const r = def.resources(args, { grants });
    const list: readonly CallResource[] = r instanceof Promise ? await r : r;
    const resources: ConsentResource[] = [];
    const locks: string[] = [];
    for (const x of list) {
      const writes = x.access ? x.access === 'write' : !(d.risk?.read_only ?? false);
      const c = this.o.grants?.check(x, writes);
      if (c && 'refused' in c) throw new WireError('permission_denied', c.refused, { details: { reason: 'not_granted', kind: x.kind } });
      const g = c?.grant;
      const label = x.label ?? g?.alias;
      const ask = x.ask ?? g?.ask;
      resources.push({ kind: x.kind, id: x.id, granted: g !== undefined, ...(label !== undefined ? { label } : {}), ...(ask ? { ask } : {}) });
      if (x.lock !== false) locks.push(x.lock ?? `${x.kind}:${x.id}`);
    }
    return { resources, locks: [...new Set(locks)] };
  }

  /** Starts the execution budget: the call's signal fires with a timeout reason when it runs out. */
  private startBudget(call: InFlight, ms: number): NodeJS.Timeout {
    call.budgetMs = ms;
    return setTimeout(() => this.abort(call, 'timeout'), ms);
  }

  private fallbackTemp: TempArea | undefined;

  /** The temp area: the configured one, else (unit tests) a private folder under the OS temp dir. */
  private tempArea(): TempArea {
    if (this.o.temp) return this.o.temp;
    this.fallbackTemp ??= new TempArea(join(tmpdir(), `aios-device-calls-${process.pid}`));
    return this.fallbackTemp;
  }

  private async execute(call: InFlight, args: Record<string, unknown>, requester: InvokeParams['requester'], log: Logger): Promise<Outcome> {
    const d = call.reg.descriptor;
    const t = call.times;
    const temp = this.tempArea().scope(call.callId);
    const ctx: CallContext = {
      tempFile: (ext) => temp.tempFile(ext),
      tempDir: () => temp.tempDir(),
      resources: call.resources ?? [],
      callId: call.callId,
      functionId: call.fn,
      get signal() {
        return call.ab.signal;
      },
      requester,
      log,
      blobs: this.o.blobs,
      progress: (pr) => this.progress(call, pr),
      commit: () => {
        call.committed = true;
      },
    };
    call.handlerRunning = true;
    const handler = Promise.resolve().then(() => call.reg.def.run(args, ctx));
    const settled = handler.then(
      (v) => ({ ok: true as const, v }),
      (e: unknown) => ({ ok: false as const, e }),
    );
    // The call's temp files go when its handler settles, however the call ended (even after its outcome).
    void settled.then(() => temp.close()).catch((e: unknown) => log.warn({ err: String(e) }, 'a call\'s temporary files could not be removed'));
    // Whichever comes first: the handler settles, or the call is aborted (`abort` wakes this).
    const first = await new Promise<Awaited<typeof settled> | 'aborted'>((resolve) => {
      if (call.ab.aborted) return resolve('aborted');
      call.wake = () => resolve('aborted');
      void settled.then(resolve);
    });
    call.wake = undefined;
    if (first !== 'aborted') {
      call.handlerRunning = false;
      if (first.ok) return this.completed(call, first.v, log);
      return this.failedFromError(call, first.e, log);
    }
    // The signal fired: give the handler its grace period to stop, then answer.
    const kind = call.ab.reason!.kind;
    let graceTimer: NodeJS.Timeout | undefined;
    const grace = new Promise<'grace'>((r) => (graceTimer = setTimeout(() => r('grace'), ABORT_GRACE_MS)));
    const stopped = await Promise.race([settled, grace]);
    clearTimeout(graceTimer);
    if (stopped === 'grace') {
      void settled.then((s) => log.warn({ late: s.ok ? 'result' : 'error' }, 'handler finished after its call ended; result dropped'));
    } else {
      call.handlerRunning = false;
      if (stopped.ok && !call.committed && kind !== 'timeout') {
        // The handler finished despite the abort: its late result is logged, not delivered (§6.2).
        log.info({}, 'handler completed after cancellation; result dropped');
      }
    }
    const side: SideEffects = stopped !== 'grace' && !call.committed ? (stopped.ok ? 'possible' : 'none') : 'possible';
    switch (kind) {
      case 'timeout':
        return errorOutcome(t, 'failed', 'timeout', `The call ran longer than its ${call.budgetMs ?? Math.min(d.timeout_ms_max, d.timeout_ms_default)} ms budget and was stopped.`, side);
      case 'shutdown':
        return errorOutcome(t, 'unknown', 'execution_interrupted', 'The device client stopped while this call was running.', side === 'none' ? 'none' : 'possible');
      case 'lease':
        return errorOutcome(t, 'cancelled', 'cancelled', 'The call was cancelled because the bridge did not come back in time.', side, { reason: 'lease_expired' });
      default:
        return errorOutcome(t, 'cancelled', 'cancelled', 'The call was cancelled.', side);
    }
  }

  /** A handler's result as the outcome (its size is checked once the outcome is serialized, in `run`). */
  private completed(call: InFlight, output: unknown, log: Logger): Outcome {
    const d = call.reg.descriptor;
    const violations = schemaValidator.validate(d.output_schema, output);
    if (violations.length) log.error({ violations }, 'handler output does not match its output_schema (defect)');
    return finalOutcome(call.times, 'completed', { output, output_valid: violations.length === 0 });
  }

  private failedFromError(call: InFlight, e: unknown, log: Logger): Outcome {
    const t = call.times;
    if (e instanceof WireError) {
      const side: SideEffects = e.declaredSideEffects ?? (call.committed ? 'possible' : 'none');
      return errorOutcome(t, 'failed', e.type, e.message, side, e.details, e.retryable);
    }
    if (isCancellation(e)) {
      return errorOutcome(t, 'failed', 'execution_failed', 'The handler stopped unexpectedly.', call.committed ? 'possible' : 'none');
    }
    log.error({ err: e instanceof Error ? e.name + ': ' + e.message : String(e) }, 'handler threw an unexpected error');
    return errorOutcome(t, 'failed', 'execution_failed', 'The function failed on the device.', 'possible');
  }

  private progress(call: InFlight, pr: Progress): void {
    if (isTerminal(call.state)) return;
    const now = Date.now();
    const send = (x: Progress) => {
      call.lastProgress = Date.now();
      const note: ProgressNote = { call_id: call.callId, seq: call.progressSeq++, ...x };
      this.o.notify('aios/notification.progress', note);
    };
    if (now - call.lastProgress >= PROGRESS_INTERVAL_MS && !call.progressTimer) {
      send(pr);
      return;
    }
    call.pendingProgress = pr; // keep only the newest; sent at the next slot
    if (!call.progressTimer) {
      call.progressTimer = setTimeout(() => {
        call.progressTimer = undefined;
        const x = call.pendingProgress;
        call.pendingProgress = undefined;
        if (x && !isTerminal(call.state)) send(x);
      }, Math.max(0, PROGRESS_INTERVAL_MS - (now - call.lastProgress)));
    }
  }
}

/** A call's logger: its child logger is made on first use (most calls log nothing but their last line). */
class CallLogger implements Logger {
  private made: Logger | undefined;
  constructor(private readonly parent: Logger, private readonly callId: string, private readonly fn: string) {}
  private get l(): Logger {
    return (this.made ??= this.parent.child({ call_id: this.callId, function: this.fn }));
  }
  debug(o: object, m?: string): void {
    this.l.debug(o, m);
  }
  info(o: object, m?: string): void {
    this.l.info(o, m);
  }
  warn(o: object, m?: string): void {
    this.l.warn(o, m);
  }
  error(o: object, m?: string): void {
    this.l.error(o, m);
  }
  child(b: Record<string, unknown>): Logger {
    return this.l.child(b);
  }
}
