/**
 * §6.2's state notes through the real dispatcher (journal, registry, a consent gate that asks for one
 * function), with the notes' window driven by a manual clock: no test here waits for real time.
 * - 1.1: a fast call sends no note; a slow one sends its `running` note at the window's end (10 ms), not
 *   before; `awaiting_confirmation` goes out at once and is never dropped; one flush serves every call
 *   of a window; `seq` counts the notes sent; the terminal state never travels in a note.
 * - 1.0: every transition is sent when it happens, the terminal one included.
 */
import { test } from 'node:test';
import { until } from '../helpers/wait.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Dispatcher } from '../../src/agent/dispatcher.js';
import { Journal } from '../../src/agent/journal.js';
import { FunctionRegistry } from '../../src/agent/registry.js';
import { silentLogger } from '../../src/base/logger.js';
import { NOTE_WINDOW_MS } from '../../src/agent/state-notes.js';
import type { ConsentDecision, ConsentGate } from '../../src/seams/call-seams.js';
import { defineFunction, type BlobClient, type FunctionDefinition } from '../../src/sdk/index.js';
import type { CallStateNote, Descriptor, Outcome } from '../../src/protocol/messages.js';
import { WireError } from '../../src/protocol/errors.js';
import { ManualClock } from '../helpers/manual-clock.js';

const ID = { workspaceId: 'ws_n', userId: 'usr_n', deviceId: 'dev_n' };

function descriptor(id: string): Descriptor {
  return {
    id, name: id, description: 'test', version: '1.0.0', capability_type: 'device', access: 'restricted', permission_level: 'low',
    risk: { read_only: true, destructive: false, idempotent: true, physical: false }, confirmation: 'policy',
    input_schema: { type: 'object' }, output_schema: { type: 'object' }, timeout_ms_default: 60_000, timeout_ms_max: 60_000,
    cancellable: true, locks: [],
  } as Descriptor;
}

/** A promise with its resolve, for handlers and prompts the test releases. */
function deferred<T = undefined>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function rig(version: '1.0' | '1.1') {
  const dir = mkdtempSync(join(tmpdir(), 'aios-notes-'));
  const clock = new ManualClock();
  const notes: CallStateNote[] = [];
  const slow = new Map<string, { started: ReturnType<typeof deferred>; release: ReturnType<typeof deferred> }>();
  const gateFor = (callId: string) => {
    let g = slow.get(callId);
    if (!g) slow.set(callId, (g = { started: deferred(), release: deferred() }));
    return g;
  };
  const prompts = new Map<string, ReturnType<typeof deferred<ConsentDecision>>>();
  const registry = new FunctionRegistry();
  const defs = [
    defineFunction<Record<string, never>, { ok: boolean }>({ descriptor: descriptor('test.fast'), run: async () => ({ ok: true }) }),
    defineFunction<Record<string, never>, { ok: boolean }>({
      descriptor: descriptor('test.slow'),
      run: async (_a, ctx) => {
        const g = gateFor(ctx.callId);
        g.started.resolve(undefined);
        await g.release.promise;
        return { ok: true };
      },
    }),
    defineFunction<Record<string, never>, { ok: boolean }>({ descriptor: descriptor('test.ask'), run: async () => ({ ok: true }) }),
  ];
  registry.register('test', defs as unknown as FunctionDefinition<never, unknown>[]);
  registry.settle();
  const allowed: ConsentDecision = { confirmation: { required: true, decision: 'allowed', decided_by: 'user', remembered: false } };
  const consent: ConsentGate = {
    decideNow: (req) => (req.descriptor.id === 'test.ask' ? undefined : { confirmation: { required: false, decision: 'not_required', decided_by: 'policy', remembered: false } }),
    decide: (req, signal) => {
      const d = deferred<ConsentDecision>();
      prompts.set(req.callId, d);
      // Withdrawn when the call is aborted (a failed test's shutdown must not hang on it).
      signal.addEventListener('abort', () => d.resolve({ ...allowed, error: new WireError('user_rejected', 'withdrawn') }));
      return d.promise;
    },
    isPaused: () => false,
    isDisabled: () => false,
  };
  const journal = new Journal(join(dir, 'journal.sqlite'), { workspaceId: ID.workspaceId, deviceId: ID.deviceId });
  const dispatcher = new Dispatcher({
    identity: ID, registry, journal, consent, blobs: {} as BlobClient, log: silentLogger(), maxConcurrentCalls: 8,
    dedupeRetentionS: 86_400, defaultConfirmTimeoutMs: 60_000, maxOutputBytes: 1 << 20,
    notify: (method, params) => {
      if (method === 'aios/notification.call_state') notes.push(params as CallStateNote);
    },
    coalesceNotes: () => version === '1.1',
    noteClock: clock,
  });
  const invoke = (fn: string, callId: string): Promise<Outcome> =>
    dispatcher.invoke({ call_id: callId, function: fn, arguments: {}, workspace_id: ID.workspaceId, user_id: ID.userId, device_id: ID.deviceId });
  /** Resolves once the consent gate has been asked about `callId` (the dispatcher awaits it). */
  const prompted = async (callId: string) => {
    return until(() => prompts.get(callId), 10_000, `the prompt for ${callId}`, 0);
  };
  const of = (callId: string) => notes.filter((n) => n.call_id === callId).map((n) => `${n.state}#${n.seq}`);
  return {
    clock, notes, invoke, gateFor, prompted, allowed, of,
    done: async () => {
      await dispatcher.shutdown();
      journal.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('1.1: a call that ends inside the window sends no note at all (its response alone)', async () => {
  const r = rig('1.1');
  try {
    const o = await r.invoke('test.fast', 'fast-1');
    assert.equal(o.state, 'completed');
    assert.deepEqual(r.notes, [], 'nothing sent before the response');
    r.clock.advance(NOTE_WINDOW_MS * 5);
    assert.deepEqual(r.notes, [], 'nor when the window ends: the terminal state superseded the held notes');
  } finally {
    await r.done();
  }
});

test('1.1: a slow call sends its running note at the window\'s end, not before, and no terminal note', async () => {
  const r = rig('1.1');
  try {
    const g = r.gateFor('slow-1');
    const call = r.invoke('test.slow', 'slow-1');
    await g.started.promise; // the handler runs: the call is in `running`
    assert.deepEqual(r.notes, [], 'held back');
    const opened = r.clock.now();
    assert.deepEqual(r.clock.scheduled, [opened + NOTE_WINDOW_MS], 'one flush, at the window\'s end');
    r.clock.advance(NOTE_WINDOW_MS - 1);
    assert.deepEqual(r.notes, [], 'still held 1 ms before the window ends');
    r.clock.advance(1);
    assert.deepEqual(r.of('slow-1'), ['running#0'], 'running sent at 10 ms; accepted was superseded and seq counts sent notes');
    g.release.resolve(undefined);
    assert.equal((await call).state, 'completed');
    r.clock.advance(NOTE_WINDOW_MS * 5);
    assert.deepEqual(r.of('slow-1'), ['running#0'], 'the terminal state travels in the response only');
  } finally {
    await r.done();
  }
});

test('1.1: one window\'s flush serves every call that entered a state in it', async () => {
  const r = rig('1.1');
  try {
    const a = r.gateFor('win-a');
    const b = r.gateFor('win-b');
    const calls = [r.invoke('test.slow', 'win-a'), r.invoke('test.slow', 'win-b')];
    await Promise.all([a.started.promise, b.started.promise]);
    assert.equal(r.clock.scheduled.length, 1, 'one flush for the window, not a timer per call');
    r.clock.advance(NOTE_WINDOW_MS);
    assert.deepEqual([r.of('win-a'), r.of('win-b')], [['running#0'], ['running#0']]);
    a.release.resolve(undefined);
    b.release.resolve(undefined);
    await Promise.all(calls);
  } finally {
    await r.done();
  }
});

test('1.1: awaiting_confirmation is sent when entered, and never dropped by the states after it', async () => {
  const r = rig('1.1');
  try {
    const call = r.invoke('test.ask', 'ask-1');
    const prompt = await r.prompted('ask-1');
    assert.deepEqual(r.of('ask-1'), ['awaiting_confirmation#0'], 'sent at once, without the window ending; the held accepted note dropped');
    prompt.resolve(r.allowed);
    const o = await call;
    assert.equal(o.state, 'completed');
    r.clock.advance(NOTE_WINDOW_MS * 5);
    assert.deepEqual(r.of('ask-1'), ['awaiting_confirmation#0'], 'the call ended inside the window after the prompt: no running note, no terminal note');
  } finally {
    await r.done();
  }
});

test('1.0: every transition is sent when it happens, the terminal one included, with no window', async () => {
  const r = rig('1.0');
  try {
    assert.equal((await r.invoke('test.fast', 'old-fast')).state, 'completed');
    assert.deepEqual(r.of('old-fast'), ['accepted#0', 'running#1', 'completed#2']);
    const call = r.invoke('test.ask', 'old-ask');
    (await r.prompted('old-ask')).resolve(r.allowed);
    await call;
    assert.deepEqual(r.of('old-ask'), ['accepted#0', 'awaiting_confirmation#1', 'running#2', 'completed#3']);
    assert.deepEqual(r.clock.scheduled, [], 'a 1.0 session never holds a note');
  } finally {
    await r.done();
  }
});
