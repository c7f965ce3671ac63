/**
 * The handler test kit: `createTestHost(handler, { grants, options })` runs a handler inside the real call
 * path (the agent's dispatcher, registry, journal and grant store) in a temp data directory, so a test
 * exercises what production does: argument validation against the real schemas, `resources()` against
 * real grants, a real AbortSignal with cancel and timeouts, output validation, per-call temp files, and
 * the handler's prompt sentences rendered from its catalogue. Blobs live in memory.
 *
 * Consent is not under test here (src/consent has its own tests): every call that reaches consent is
 * "asked", its sentence is recorded in `host.prompts`, and the answer is `answer` (default allow).
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Dispatcher } from '../agent/dispatcher.js';
import { GrantStore } from '../grants/grant-store.js';
import { Journal } from '../agent/journal.js';
import { Outbox } from '../agent/outbox.js';
import { FunctionRegistry } from '../agent/registry.js';
import type { ConsentDecision, ConsentGate, ConsentRequest } from '../seams/call-seams.js';
import { WireError } from '../protocol/errors.js';
import type { CallState, Outcome, ProgressNote, Requester } from '../protocol/messages.js';
import { strings, type Locale } from '../i18n/index.js';
import { APP_VERSION } from '../version.js';
import type { BlobClient, BlobRef, Handler, HandlerEnv } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';
import { catalogueDirs, instantiate, type LoadedHandler } from '../sdk/instance.js';
import { TempArea } from '../sdk/temp.js';

const ID = { workspaceId: 'ws_test', userId: 'usr_test', deviceId: 'dev_test' };

/** Options of createTestHost. */
export interface TestHostOptions {
  /** The `grants:` section, as in the config file (e.g. `{ serial: [{ alias: 'scale', path: '/dev/ttyUSB0' }] }`). */
  grants?: Record<string, unknown>;
  /** The handler's `handlers.<name>` options. */
  options?: Record<string, unknown>;
  /** How every prompt is answered (default 'allow'); a function sees the prompt first. */
  answer?: 'allow' | 'deny' | ((p: TestPrompt) => 'allow' | 'deny');
  /** Language of the recorded prompt sentences (default en). */
  locale?: Locale;
  /** Where the handler's catalogue is (default: handlers/<name>/i18n). */
  catalogueDir?: string;
  /** Grant kinds of other handlers the test's grants use (the handler's own are registered anyway). */
  extraHandlers?: readonly Handler[];
  /** A logger (default: records every entry in `host.logs`). */
  log?: Logger;
}

/** A prompt the host was asked to show. */
export interface TestPrompt {
  readonly callId: string;
  readonly functionId: string;
  /** The rendered sentence (handler's describe(), or the generic one). */
  readonly sentence: string;
  readonly resources: readonly { kind: string; id: string; label?: string }[];
}

/** A log entry the host's logger received. */
export interface TestLogEntry {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly obj: object;
  readonly msg: string | undefined;
}

/** Per-call options of host.call / host.start. */
export interface TestCallOptions {
  /** The call id (default: a fresh one); reuse one to see exactly-once replay. */
  callId?: string;
  /** The call's budget (default: the descriptor's default). */
  timeoutMs?: number;
  requester?: Requester;
}

/** The outcome a test looks at: the §6.3 outcome plus shortcuts. */
export interface TestOutcome extends Outcome {
  readonly state: CallState;
}

/** In-memory blobs: what a handler uploads and what a test offers it to download. */
export interface MemoryBlobs extends BlobClient {
  /** Stores bytes and returns their reference (for arguments such as `blob`). */
  put(data: Buffer | string, mediaType?: string): BlobRef;
  /** The bytes of a reference the handler returned; throws when unknown. */
  get(ref: BlobRef): Buffer;
}

/** A running test host. */
export interface TestHost {
  readonly handler: LoadedHandler;
  /** The handler's data directory (a fresh temp folder, removed by close()). */
  readonly dataDir: string;
  /** The live grants (add/remove to test grant changes). */
  readonly grants: GrantStore;
  readonly blobs: MemoryBlobs;
  /** Sentences of the prompts asked so far. */
  readonly prompts: TestPrompt[];
  /** Progress notifications sent so far (throttled as on the wire). */
  readonly progress: ProgressNote[];
  readonly logs: TestLogEntry[];
  /** Runs a call to its end and returns its outcome. */
  call(functionId: string, args: Record<string, unknown>, opts?: TestCallOptions): Promise<TestOutcome>;
  /** Starts a call; `callId` names it for cancel(). */
  start(functionId: string, args: Record<string, unknown>, opts?: TestCallOptions): { callId: string; outcome: Promise<TestOutcome> };
  /** Cancels a running call (§6.5) and returns the cancel's answer. */
  cancel(callId: string): Promise<Outcome>;
  /** Runs the handler's onPause / onResume hooks. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  /** Disposes the handler, stops the dispatcher, removes the data dir. */
  close(): Promise<void>;
}

/** A logger that keeps entries in an array. */
function recordingLogger(into: TestLogEntry[]): Logger {
  const at = (level: TestLogEntry['level']) => (obj: object, msg?: string) => void into.push({ level, obj, msg });
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return log;
}

/** Blobs kept in memory, with the size and SHA-256 checks of the real client. */
export function memoryBlobs(): MemoryBlobs {
  const store = new Map<string, Buffer>();
  const refOf = (data: Buffer, mediaType: string): BlobRef => {
    const ref = { blob_id: `blob_${randomUUID().replace(/-/g, '')}`, sha256: createHash('sha256').update(data).digest('hex'), size: data.length, media_type: mediaType };
    store.set(ref.blob_id, data);
    return ref;
  };
  return {
    put: (data, mediaType = 'application/octet-stream') => refOf(Buffer.from(data), mediaType),
    get(ref) {
      const b = store.get(ref.blob_id);
      if (!b) throw new Error(`no blob ${ref.blob_id} was uploaded`);
      return b;
    },
    async uploadFile(path, mediaType, signal) {
      signal?.throwIfAborted();
      return refOf(await readFile(path, { signal }), mediaType);
    },
    async downloadToFile(ref, path, signal) {
      signal?.throwIfAborted();
      const b = store.get(ref.blob_id);
      if (!b) throw new WireError('invalid_arguments', `The blob ${ref.blob_id} does not exist.`);
      await writeFile(path, b, { signal, mode: 0o600 });
      if (b.length !== ref.size || createHash('sha256').update(b).digest('hex') !== ref.sha256) {
        await rm(path, { force: true });
        throw new WireError('invalid_arguments', 'The blob does not match its size or SHA-256.');
      }
    },
  };
}

/** Runs `handler` in a real call path with a temp data dir; close() it at the end of the test. */
export async function createTestHost(handler: Handler, opts: TestHostOptions = {}): Promise<TestHost> {
  const dataDir = mkdtempSync(join(tmpdir(), `aios-testhost-${handler.name}-`));
  const logs: TestLogEntry[] = [];
  const log = opts.log ?? recordingLogger(logs);
  const prompts: TestPrompt[] = [];
  const progress: ProgressNote[] = [];
  const blobs = memoryBlobs();
  const locale = opts.locale ?? 'en';
  const grants = new GrantStore({ dataDir, log });
  for (const h of [...(opts.extraHandlers ?? []), handler]) if (h.grantKinds?.length) grants.registerKinds(h.name, h.grantKinds);
  const problems = grants.setConfig(opts.grants ?? {});
  if (problems.length) {
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`createTestHost: bad grants: ${problems.join('; ')}`);
  }
  const registry = new FunctionRegistry();
  const env: HandlerEnv = {
    grants,
    options: opts.options ?? {},
    dataDir,
    log,
    appVersion: APP_VERSION,
    listFunctions: () => registry.ids(),
  };
  const loaded = await instantiate(handler, env, { catalogueDirs: opts.catalogueDir ? [opts.catalogueDir] : catalogueDirs(handler.name) });
  registry.register(handler.name, loaded.functions);
  registry.settle();
  const journal = new Journal(join(dataDir, 'journal.sqlite'), { workspaceId: ID.workspaceId, deviceId: ID.deviceId });
  const answerFor = (p: TestPrompt) => (typeof opts.answer === 'function' ? opts.answer(p) : (opts.answer ?? 'allow'));
  const gate: ConsentGate = {
    decideNow: () => undefined,
    async decide(req: ConsentRequest): Promise<ConsentDecision> {
      const p: TestPrompt = {
        callId: req.callId,
        functionId: req.descriptor.id,
        sentence: req.summary,
        resources: (req.resources ?? []).map((r) => ({ kind: r.kind, id: r.id, ...(r.label ? { label: r.label } : {}) })),
      };
      prompts.push(p);
      const allowed = answerFor(p) === 'allow';
      const confirmation = { required: true, decision: allowed ? 'allowed' : 'denied', decided_by: 'user', remembered: false } as const;
      return allowed ? { confirmation } : { confirmation, error: new WireError('user_rejected', 'The user rejected the call (test host).') };
    },
    isPaused: () => false,
    isDisabled: () => false,
  };
  const temp = new TempArea(join(dataDir, 'tmp', 'calls'));
  temp.sweep();
  // The caller holds every outcome as its call's answer: delivered, as over a live session.
  const outbox = new Outbox({ store: journal, log });
  outbox.online({ isOpen: true, report: async (outcomes) => ({ accepted: outcomes.map((o) => o.call_id) }) });
  const dispatcher = new Dispatcher({
    outbox,
    identity: ID,
    registry,
    grants,
    journal,
    consent: gate,
    blobs,
    temp,
    locale,
    log,
    maxConcurrentCalls: 8,
    dedupeRetentionS: 86_400,
    defaultConfirmTimeoutMs: 60_000,
    maxOutputBytes: 4 << 20,
    notify: (method, params) => {
      if (method === 'aios/notification.progress') progress.push(params as ProgressNote);
    },
  });
  const start = (functionId: string, args: Record<string, unknown>, o: TestCallOptions = {}) => {
    const callId = o.callId ?? randomUUID();
    const outcome = dispatcher.invoke({
      call_id: callId,
      function: functionId,
      arguments: args,
      workspace_id: ID.workspaceId,
      user_id: ID.userId,
      device_id: ID.deviceId,
      ...(o.timeoutMs ? { timeout_ms: o.timeoutMs } : {}),
      ...(o.requester ? { requester: o.requester } : {}),
    });
    return { callId, outcome };
  };
  let closed = false;
  return {
    handler: loaded,
    dataDir,
    grants,
    blobs,
    prompts,
    progress,
    logs,
    start,
    call: (functionId, args, o) => start(functionId, args, o).outcome,
    cancel: (callId) => dispatcher.cancel({ call_id: callId }),
    pause: () => loaded.pause(),
    resume: () => loaded.resume(),
    async close() {
      if (closed) return;
      closed = true;
      await dispatcher.shutdown();
      await loaded.dispose();
      journal.close();
      rmSync(dataDir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

/** Renders a catalogue key the way the prompt would (for assertions on sentences). */
export function render(key: string, params?: Record<string, string | number>, locale: Locale = 'en'): string {
  return strings.render(params ? { key, params } : { key }, locale);
}
