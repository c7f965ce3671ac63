/**
 * Test harness for the bluetooth handler: creates it as the host does, and runs calls with a real
 * AbortController, checking arguments and results against the published schemas (as the agent does).
 * Until the kit's createTestHost lands, this is the handler-level host of these tests.
 */
import assert from 'node:assert/strict';
import type { CallContext, CallResource, FunctionDefinition, HandlerEnv, HandlerInstance, Logger, Progress } from '../../../src/sdk/index.js';
import { WireError } from '../../../src/sdk/index.js';
import { schemaValidator } from '../../../src/protocol/schema-validator.js';
import { GrantStore } from '../../../src/grants/grant-store.js';
import handler, { bluetoothGrants } from '../index.js';

/** Log lines the handler wrote (to check nothing read or written is logged). */
export const logged: { level: string; obj: object; msg?: string }[] = [];
const rec = (level: string) => (obj: object, msg?: string) => void logged.push({ level, obj, ...(msg !== undefined ? { msg } : {}) });
export const recordingLog: Logger = { debug: rec('debug'), info: rec('info'), warn: rec('warn'), error: rec('error'), child: () => recordingLog };

/** One call's context, with its controller and the progress it reported. */
export interface TestCtx extends CallContext {
  readonly controller: AbortController;
  readonly progressSeen: Progress[];
}

/** A call context; `onProgress` lets a test act mid-call (e.g. cancel it). */
export function ctx(onProgress?: (p: Progress, c: TestCtx) => void): TestCtx {
  const controller = new AbortController();
  const c: TestCtx = {
    callId: `call-${Math.random().toString(36).slice(2)}`,
    functionId: 'bluetooth.test',
    signal: controller.signal,
    requester: undefined,
    resources: [],
    log: recordingLog,
    blobs: { uploadFile: () => Promise.reject(new Error('no blobs')), downloadToFile: () => Promise.reject(new Error('no blobs')) },
    controller,
    progressSeen: [],
    progress(p) {
      c.progressSeen.push(p);
      onProgress?.(p, c);
    },
    commit() {},
    tempFile: () => Promise.reject(new Error('the bluetooth handler makes no temp files')),
    tempDir: () => Promise.reject(new Error('the bluetooth handler makes no temp folders')),
  };
  return c;
}

type Fn = FunctionDefinition<Record<string, unknown>, unknown>;

/**
 * The handler's functions, created with these grants (the agent's real GrantStore and the handler's grant
 * kind) and options, called as the host calls them: resources() first, then run(). The kit's
 * createTestHost runs the whole call path; this direct form lets a test abort a call at an exact point.
 */
export class TestHandler {
  constructor(
    readonly fns: Map<string, Fn>,
    readonly grants: GrantStore,
    readonly instance: HandlerInstance,
  ) {}

  /** Creates the handler (grant entries as in the config: strings or objects). */
  static async create(grants: unknown[], options: Record<string, unknown> = { binding: 'websocket', idle_ms: 60_000, find_ms: 5000 }): Promise<TestHandler> {
    const store = new GrantStore({});
    store.registerKinds('bluetooth', [bluetoothGrants]);
    const problems = store.setConfig({ bluetooth: grants });
    assert.deepEqual(problems, [], 'grants rejected');
    const env: HandlerEnv = { grants: store, options, dataDir: '/nonexistent', log: recordingLog, appVersion: '0.0.0-test', listFunctions: () => [] };
    const created = await handler.create(env);
    const instance = (Array.isArray(created) ? { functions: created } : created) as HandlerInstance;
    return new TestHandler(new Map((instance.functions as unknown as Fn[]).map((d) => [d.descriptor.id, d])), store, instance);
  }

  fn(id: string): Fn {
    const f = this.fns.get(id);
    assert.ok(f, `no function ${id}`);
    return f;
  }

  /** What the call would touch (and lock), or the error that refuses it before consent. */
  async resources(id: string, args: Record<string, unknown>): Promise<readonly CallResource[]> {
    const f = this.fn(id);
    return f.resources ? f.resources(args, { grants: this.grants }) : [];
  }

  /** Runs a call like the agent: arguments checked, resources() before run(), result checked against the output schema. */
  async call(id: string, args: Record<string, unknown>, c: TestCtx = ctx()): Promise<Record<string, unknown>> {
    const f = this.fn(id);
    assert.deepEqual(schemaValidator.validate(f.descriptor.input_schema, args), [], `arguments of ${id} fail its input schema`);
    await this.resources(id, args);
    const out = await f.run(args, c);
    assert.deepEqual(schemaValidator.validate(f.descriptor.output_schema, out), [], `result of ${id} fails its output schema`);
    return out as Record<string, unknown>;
  }
}

/** Asserts a WireError of `type` (and `details.reason`, when given). */
export async function rejectsWith(p: Promise<unknown>, type: string, reason?: string): Promise<WireError> {
  let got: unknown;
  await assert.rejects(p, (e: unknown) => {
    got = e;
    assert.ok(e instanceof WireError, `expected a WireError, got ${String(e)}`);
    assert.equal(e.type, type, e.message);
    if (reason) assert.equal(e.details?.['reason'], reason, e.message);
    return true;
  });
  return got as WireError;
}
