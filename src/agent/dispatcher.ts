/**
 * The call path on the device (PROTOCOL.md §5, §6): checks in the order of §6.1, the journal,
 * consent, locks, execution with timeouts and cancellation, output validation, outcome.
 * Handler errors are mapped to wire errors here and only here.
 */
import { argsDigest } from '../protocol/hash.js';
import { RPC, RpcError, WireError, isCancellation, type SideEffects } from '../protocol/errors.js';
import { isTerminal, type Descriptor, type CallState, type CallStateNote, type CancelParams, type InvokeParams, type Outcome, type ProgressNote, type CallStatus, type CallListParams } from '../protocol/messages.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import type { BlobClient, CallContext, Logger, Progress } from '../sdk/index.js';
import type { Journal } from './journal.js';
import { LockAbortedError, LockManager, Semaphore } from './locks.js';
import { errorOutcome, finalOutcome, preAcceptOutcome, uuidv7Time, type CallTimes } from '../protocol/outcomes.js';
import type { FunctionRegistry, RegisteredFunction } from './registry.js';
import type { CallObserver, ConsentGate, ConsentRequest } from './seams.js';

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
  journal: Journal;
  consent: ConsentGate;
  observers?: CallObserver[];
  blobs: BlobClient;
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

/** The journal could not take the call: it must not run. */
class JournalFault extends Error {
  constructor(override readonly cause: unknown) {
    super('journal write failed');
  }
}

interface InFlight {
  callId: string;
  /** The accept is queued in (or committed to) the journal. */
  journalled: boolean;
  /** The `accepted` notification went out. */
  announced: boolean;
  fn: string;
  digest: string;
  reg: RegisteredFunction;
  state: CallState;
  seq: number;
  /**
   * Fires on cancel, lease expiry and shutdown at any stage, and on timeout once the execution budget
   * runs (it starts after consent, so a prompt never sees a timeout reason).
   */
  ctl: AbortController;
  committed: boolean;
  handlerRunning: boolean;
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

  constructor(private readonly o: DispatcherOptions) {
    this.slots = new Semaphore(o.maxConcurrentCalls);
  }

  /** Number of calls not yet terminal. */
  get activeCount(): number {
    return this.inflight.size;
  }

  /** `aios/function.invoke`. Always resolves with an outcome (§2 layer 3). */
  async invoke(p: InvokeParams): Promise<Outcome> {
    const id = this.o.identity;
    const reg0 = this.o.registry.get(p.function);
    const refuse = (state: CallState, err: WireError): Outcome => this.refused(p, reg0?.descriptor, preAcceptOutcome(p.call_id, p.function, state, err));
    if (p.workspace_id !== id.workspaceId || p.user_id !== id.userId || p.device_id !== id.deviceId) {
      return refuse('failed', new WireError('identity_mismatch', 'The workspace, user or device of this call is not this client\'s.'));
    }
    const reg = reg0;
    if (!reg || this.o.consent.isDisabled(p.function)) {
      return refuse('failed', new WireError('unknown_function', `No enabled function is registered as ${p.function}.`));
    }
    if (p.descriptor_hash !== undefined && p.descriptor_hash !== reg.descriptor.descriptor_hash) {
      return refuse('failed', new WireError('function_changed', 'The function\'s descriptor has changed since the caller read it.', { details: { descriptor_hash: reg.descriptor.descriptor_hash } }));
    }
    const violations = schemaValidator.validate(reg.descriptor.input_schema, p.arguments);
    if (violations.length) {
      return refuse('failed', new WireError('invalid_arguments', 'The arguments do not match the function\'s input schema.', { details: { violations } }));
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
      return refuse('expired', new WireError('call_expired', 'The call is older than the deduplication window and was not run.'));
    }
    if (this.o.consent.isPaused()) {
      return refuse('rejected', new WireError('paused', 'The user has paused this device client.'));
    }
    if (!this.accepting) {
      return refuse('rejected', new WireError('paused', 'The device client is shutting down.', { retryable: true }));
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
      ctl: new AbortController(),
      committed: false,
      handlerRunning: false,
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
  }

  /** Reports a call refused before acceptance to the observers (audit), then returns its outcome. */
  private refused(p: InvokeParams, descriptor: Descriptor | undefined, outcome: Outcome): Outcome {
    this.observe(outcome, descriptor, p);
    return outcome;
  }

  private observe(outcome: Outcome, descriptor: Descriptor | undefined, p: InvokeParams): void {
    for (const obs of this.o.observers ?? []) {
      try {
        obs.onFinished({ outcome, descriptor, args: descriptor ? p.arguments : undefined, requester: p.requester, workspaceId: p.workspace_id, userId: p.user_id });
      } catch (e) {
        this.o.log.error({ err: String(e) }, 'call observer failed');
      }
    }
  }

  private conflict(p: InvokeParams): Outcome {
    return preAcceptOutcome(p.call_id, p.function, 'failed', new WireError('idempotency_conflict', 'This call_id was already used with a different function or arguments.'));
  }

  private abort(call: InFlight, kind: AbortKind): void {
    const reason = new AbortReason(kind);
    if (!call.ctl.signal.aborted) call.ctl.abort(reason);
  }

  private setState(call: InFlight, state: CallState): void {
    if (state === 'accepted') call.announced = true;
    call.state = state;
    const note: CallStateNote = { call_id: call.callId, state, seq: call.seq++, at: new Date().toISOString() };
    this.o.notify('aios/notification.call_state', note);
  }

  private async run(call: InFlight, p: InvokeParams): Promise<Outcome> {
    const log = lazyChild(this.o.log, { call_id: call.callId, function: call.fn });
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
    try {
      // A call that ended before it was journalled (refused by policy, cancelled during the decision) is
      // journalled now, in the same commit as its outcome.
      if (!call.journalled) void this.accept(call, 'accepted', null).catch(() => undefined);
      await this.o.journal.finish(outcome, this.o.deliverable());
    } catch (e) {
      log.error({ err: String(e) }, 'journal write of the outcome failed');
    }
    if (call.state === 'accepted' && !call.announced) this.setState(call, 'accepted');
    this.setState(call, outcome.state);
    // One line per call, on the parent logger: building a child logger per call costs more than the line.
    const line = { call_id: call.callId, function: call.fn, state: outcome.state, duration_ms: outcome.duration_ms };
    if (outcome.state === 'completed' || outcome.state === 'cancelled') this.o.log.info(line, 'call finished');
    else this.o.log.warn({ ...line, error_type: outcome.error?.type }, 'call finished');
    this.observe(outcome, d, p);
    return outcome;
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
      const r = call.ctl.signal.reason as AbortReason | undefined;
      if (!call.ctl.signal.aborted || !r || r.kind === 'timeout') return undefined;
      if (r.kind === 'shutdown') return errorOutcome(t, 'failed', 'execution_interrupted', 'The device client stopped before this call started; it did not run.', 'none');
      return errorOutcome(t, 'cancelled', 'cancelled', r.kind === 'lease' ? 'The call was cancelled because the bridge did not come back in time.' : 'The call was cancelled.', 'none', r.kind === 'lease' ? { reason: 'lease_expired' } : undefined);
    };

    const req: { -readonly [K in keyof ConsentRequest]: ConsentRequest[K] } = {
      callId: call.callId,
      descriptor: d,
      args,
      summary: `Run ${d.name}.`,
      resource: def.resource ? safe(() => def.resource!(args), '*') : '*',
      requester: p.requester,
      workspaceId: p.workspace_id,
      userId: p.user_id,
      timeoutMs: p.confirm_timeout_ms ?? this.o.defaultConfirmTimeoutMs,
    };
    const prompts = this.o.consent.needsPrompt(req);
    if (prompts) {
      // The user will be asked: journal the call first, then describe it in one sentence.
      await this.accept(call, 'accepted', null);
      this.setState(call, 'accepted');
      if (def.describe) {
        try {
          req.summary = await def.describe(args);
        } catch (e) {
          log.debug({ err: String(e) }, 'describe() failed; using a generic sentence');
        }
      }
      await this.o.journal.setState(call.callId, 'awaiting_confirmation');
      this.setState(call, 'awaiting_confirmation');
    }
    const early = cancelledNow();
    if (early) return early;
    const decision = await this.o.consent.decide(req, call.ctl.signal);
    t.confirmation = decision.confirmation;
    const afterPrompt = cancelledNow();
    if (afterPrompt) return afterPrompt;
    if (decision.error) {
      const e = decision.error;
      return errorOutcome(t, 'rejected', e.type, e.message, 'none', e.details, e.retryable);
    }

    const lockNames = def.locks ? safe(() => def.locks!(args), d.locks) : d.locks;
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
              slot = await this.slots.acquire(call.ctl.signal);
            } catch (e) {
              if (!(e instanceof LockAbortedError)) throw e;
              return cancelledNow() ?? errorOutcome(t, 'expired', 'device_busy', 'No execution slot came free before this call\'s deadline.', 'none');
            }
          }
          t.startedAt = new Date().toISOString();
          await this.accept(call, 'running', t.startedAt);
          this.setState(call, 'accepted');
          this.setState(call, 'running');
          return await this.execute(call, args, p.requester, log);
        } finally {
          clearTimeout(timer);
          slot?.();
          held();
        }
      }
      await this.accept(call, 'accepted', null);
      this.setState(call, 'accepted');
    }

    // Execution budget starts now and covers lock waits (§6.4).
    const timer = this.startBudget(call, timeoutMs);
    let release: (() => void) | undefined;
    let releaseSlot: (() => void) | undefined;
    try {
      try {
        release = await this.locks.acquireAll(lockNames, call.ctl.signal);
        releaseSlot = await this.slots.acquire(call.ctl.signal);
      } catch (e) {
        if (!(e instanceof LockAbortedError)) throw e;
        const c = cancelledNow();
        if (c) return c;
        return errorOutcome(t, 'expired', 'device_busy', 'The resource stayed busy with another call past this call\'s deadline.', 'none', { locks: lockNames });
      }

      t.startedAt = new Date().toISOString();
      await this.o.journal.setState(call.callId, 'running', t.startedAt);
      this.setState(call, 'running');
      if (call.ctl.signal.aborted) {
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

  /** Starts the execution budget: the call's signal fires with a timeout reason when it runs out. */
  private startBudget(call: InFlight, ms: number): NodeJS.Timeout {
    return setTimeout(() => {
      if (!call.ctl.signal.aborted) call.ctl.abort(new AbortReason('timeout'));
    }, ms);
  }

  private async execute(call: InFlight, args: Record<string, unknown>, requester: InvokeParams['requester'], log: Logger): Promise<Outcome> {
    const d = call.reg.descriptor;
    const t = call.times;
    const ctx: CallContext = {
      callId: call.callId,
      functionId: call.fn,
      signal: call.ctl.signal,
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
    const aborted = new Promise<'aborted'>((resolve) => {
      if (call.ctl.signal.aborted) resolve('aborted');
      else call.ctl.signal.addEventListener('abort', () => resolve('aborted'), { once: true });
    });
    const first = await Promise.race([settled, aborted]);
    if (first !== 'aborted') {
      call.handlerRunning = false;
      if (first.ok) return this.completed(call, first.v, log);
      return this.failedFromError(call, first.e, log);
    }
    // The signal fired: give the handler its grace period to stop, then answer.
    const kind = (call.ctl.signal.reason as AbortReason).kind;
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
        return errorOutcome(t, 'failed', 'timeout', `The call ran longer than its ${Math.min(d.timeout_ms_max, d.timeout_ms_default)} ms budget and was stopped.`, side);
      case 'shutdown':
        return errorOutcome(t, 'unknown', 'execution_interrupted', 'The device client stopped while this call was running.', side === 'none' ? 'none' : 'possible');
      case 'lease':
        return errorOutcome(t, 'cancelled', 'cancelled', 'The call was cancelled because the bridge did not come back in time.', side, { reason: 'lease_expired' });
      default:
        return errorOutcome(t, 'cancelled', 'cancelled', 'The call was cancelled.', side);
    }
  }

  private completed(call: InFlight, output: unknown, log: Logger): Outcome {
    const d = call.reg.descriptor;
    const size = Buffer.byteLength(JSON.stringify(output ?? null));
    if (size > this.o.maxOutputBytes) {
      return errorOutcome(call.times, 'failed', 'payload_too_large', 'The output is larger than a message may be; the function should return a blob.', d.risk?.read_only ? 'none' : 'possible', { limit: this.o.maxOutputBytes, size });
    }
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

/** A child logger made on first use (most calls never log anything but their last line). */
function lazyChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  let child: Logger | undefined;
  const get = () => (child ??= parent.child(bindings));
  return {
    debug: (o, m) => get().debug(o, m),
    info: (o, m) => get().info(o, m),
    warn: (o, m) => get().warn(o, m),
    error: (o, m) => get().error(o, m),
    child: (b) => get().child(b),
  };
}

function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
