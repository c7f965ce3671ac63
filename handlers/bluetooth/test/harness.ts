/**
 * Test harness for the bluetooth handler: creates it as the host does, and runs calls with a real
 * AbortController, checking arguments and results against the published schemas (as the agent does).
 * Until the kit's createTestHost lands, this is the handler-level host of these tests.
 */
import assert from 'node:assert/strict';
import type { CallContext, FunctionDefinition, HandlerEnv, Logger, Progress } from '../../../src/sdk/index.js';
import { WireError } from '../../../src/sdk/index.js';
import { schemaValidator } from '../../../src/protocol/schema-validator.js';
import handler from '../index.js';

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
    log: recordingLog,
    blobs: { uploadFile: () => Promise.reject(new Error('no blobs')), downloadToFile: () => Promise.reject(new Error('no blobs')) },
    controller,
    progressSeen: [],
    progress(p) {
      c.progressSeen.push(p);
      onProgress?.(p, c);
    },
    commit() {},
  };
  return c;
}

type Fn = FunctionDefinition<Record<string, unknown>, unknown>;

/** The handler's functions, created with these grants and options. */
export class TestHandler {
  constructor(readonly fns: Map<string, Fn>) {}

  /** Creates the handler (grants entries may be strings or objects). */
  static async create(grants: unknown[], options: Record<string, unknown> = { binding: 'websocket', idle_ms: 60_000, find_ms: 5000 }): Promise<TestHandler> {
    const env = { grants: { bluetooth: grants }, options, dataDir: '/nonexistent', log: recordingLog, appVersion: '0.0.0-test', listFunctions: () => [] } as unknown as HandlerEnv;
    const defs = (await handler.create(env)) as unknown as Fn[];
    return new TestHandler(new Map(defs.map((d) => [d.descriptor.id, d])));
  }

  fn(id: string): Fn {
    const f = this.fns.get(id);
    assert.ok(f, `no function ${id}`);
    return f;
  }

  /** Runs a call like the agent: arguments checked first, result checked against the output schema. */
  async call(id: string, args: Record<string, unknown>, c: TestCtx = ctx()): Promise<Record<string, unknown>> {
    const f = this.fn(id);
    assert.deepEqual(schemaValidator.validate(f.descriptor.input_schema, args), [], `arguments of ${id} fail its input schema`);
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
