/**
 * Running a call's handler (PROTOCOL.md §6.4, §6.5): its context, the race between the handler and
 * the call's abort (then up to ABORT_GRACE_MS for the handler to stop), output validation, and the
 * mapping of handler errors to wire errors, here and only here.
 */
import { WireError, isCancellation, type SideEffects } from '../protocol/errors.js';
import type { InvokeParams, Outcome } from '../protocol/messages.js';
import { errorOutcome, finalOutcome } from '../protocol/outcomes.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import type { BlobClient, CallContext, Progress } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';
import type { CallTempScope, TempArea } from '../sdk/temp.js';
import { abortedWhileRunning } from './abort.js';
import type { Call } from './call/call.js';

/** How long a handler gets to stop after its signal fires before the call is answered anyway (§6.5). */
export const ABORT_GRACE_MS = 5000;

/** What execution needs from the agent. */
export interface ExecutionEnv {
  blobs: BlobClient;
  /** Where the call's temp files go. */
  temp(): TempArea;
  /** A progress report of the call's handler. */
  progress(call: Call, pr: Progress): void;
}

/** Runs the call's handler and answers with its outcome, whatever happens (a throw is a defect of the caller). */
export async function execute(env: ExecutionEnv, call: Call, args: Record<string, unknown>, requester: InvokeParams['requester'], log: Logger): Promise<Outcome> {
  const t = call.times;
  const ctx = new HandlerContext(env, call, requester, log);
  call.handlerRunning = true;
  // The handler, started now (a synchronous throw is its rejection): one `then` and one race per call,
  // the fewest promises that still let an abort answer before the handler settles.
  let handler: Promise<unknown>;
  try {
    handler = Promise.resolve(call.reg.def.run(args, ctx));
  } catch (e) {
    handler = Promise.reject(e);
  }
  const settled = handler.then(asSettled, asFailed);
  // Whichever comes first: the handler settles, or the call is aborted (`abort` wakes this).
  const first = await new Promise<Settled | 'aborted'>((resolve) => {
    void settled.then((s) => {
      // The call's temp files go when its handler settles, however the call ended (even after its outcome).
      HandlerContext.settled(ctx);
      resolve(s);
    });
    if (call.ab.aborted) resolve('aborted');
    else call.wake = () => resolve('aborted');
  });
  call.wake = undefined;
  if (first !== 'aborted') {
    call.handlerRunning = false;
    if (first.ok) return completed(call, first.v, log);
    return failedFromError(call, first.e, log);
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
  const d = call.reg.descriptor;
  // Halted: the handler stopped on its signal (it rejected in time); one that ran to its end or past the grace did not.
  const halted = stopped !== 'grace' && !stopped.ok;
  return abortedWhileRunning(t, kind, side, call.budgetMs ?? Math.min(d.timeout_ms_max, d.timeout_ms_default), halted);
}

/** How the handler's promise settled. */
type Settled = { ok: true; v: unknown } | { ok: false; e: unknown };

const asSettled = (v: unknown): Settled => ({ ok: true, v });
const asFailed = (e: unknown): Settled => ({ ok: false, e });

/**
 * A call's context as its handler sees it: one object per call (an object literal with the `signal`
 * getter cost three times as much: V8 makes each one a dictionary). Its functions are own properties, so
 * a handler may take them off the context. The temp folder's scope is made on first use: most calls make none.
 */
class HandlerContext implements CallContext {
  readonly callId: string;
  readonly functionId: string;
  readonly resources: CallContext['resources'];
  readonly blobs: BlobClient;
  readonly tempFile = (ext?: string): Promise<string> => this.#temp().tempFile(ext);
  readonly tempDir = (): Promise<string> => this.#temp().tempDir();
  readonly progress = (pr: Progress): void => this.#env.progress(this.#call, pr);
  readonly commit = (): void => {
    this.#call.committed = true;
  };
  readonly #env: ExecutionEnv;
  readonly #call: Call;
  #scope: CallTempScope | undefined;
  /** The handler has settled: its temp files are gone, and new ones are refused. */
  #ended = false;

  constructor(
    env: ExecutionEnv,
    call: Call,
    readonly requester: CallContext['requester'],
    readonly log: Logger,
  ) {
    this.#env = env;
    this.#call = call;
    this.callId = call.callId;
    this.functionId = call.fn;
    this.resources = call.resources ?? [];
    this.blobs = env.blobs;
  }

  get signal(): AbortSignal {
    return this.#call.ab.signal;
  }

  #temp(): CallTempScope {
    if (!this.#scope) {
      this.#scope = this.#env.temp().scope(this.callId);
      // Asked for after the handler settled: the scope is closed at once, so the request fails.
      if (this.#ended) void this.#scope.close();
    }
    return this.#scope;
  }

  /** The handler settled: the call's temp folder (if it made one) is removed. */
  static settled(ctx: HandlerContext): void {
    ctx.#ended = true;
    ctx.#scope?.close().catch((e: unknown) => ctx.log.warn({ err: String(e) }, 'a call\'s temporary files could not be removed'));
  }
}

/** A handler's result as the outcome (its size is checked once the outcome is serialized). */
function completed(call: Call, output: unknown, log: Logger): Outcome {
  let violations;
  try {
    violations = schemaValidator.validate(call.reg.descriptor.output_schema, output);
  } catch (e) {
    // Schemas compile on first use: one that cannot compile is the handler's defect, as a mismatch is.
    violations = [{ pointer: '', message: `the output_schema cannot be compiled: ${(e as Error).message}` }];
  }
  if (violations.length) log.error({ violations }, 'handler output does not match its output_schema (defect)');
  return finalOutcome(call.times, 'completed', { output, output_valid: violations.length === 0 });
}

/** A handler's error as the outcome: a WireError keeps its type; anything else is `execution_failed`. */
function failedFromError(call: Call, e: unknown, log: Logger): Outcome {
  const t = call.times;
  if (e instanceof WireError) {
    const side: SideEffects = e.declaredSideEffects ?? (call.committed ? 'possible' : 'none');
    // Interrupted while it may have acted (an adapter's process ended under it): nobody knows how it ended.
    const state = e.type === 'execution_interrupted' && side !== 'none' ? 'unknown' : 'failed';
    return errorOutcome(t, state, e.type, e.message, side, e.details, e.retryable);
  }
  if (isCancellation(e)) {
    return errorOutcome(t, 'failed', 'execution_failed', 'The handler stopped unexpectedly.', call.committed ? 'possible' : 'none');
  }
  log.error({ err: e instanceof Error ? e.name + ': ' + e.message : String(e) }, 'handler threw an unexpected error');
  return errorOutcome(t, 'failed', 'execution_failed', 'The function failed on the device.', 'possible');
}

/** A call's logger: its child logger is made on first use (most calls log nothing but their last line). */
export class CallLogger implements Logger {
  private made: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly callId: string,
    private readonly fn: string,
  ) {}
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
