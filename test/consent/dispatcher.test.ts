/**
 * The consent gate and audit trail (openConsent) plugged into the real call dispatcher (journal in
 * SQLite, registry, handlers that record whether they ran): outcomes carry the decision, a rejected or cancelled call never runs, and
 * the audit trail records every call. The CLI-started bridge + agent version lives in e2e tests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { pino } from 'pino';
import { Dispatcher } from '../../src/agent/dispatcher.js';
import { Journal } from '../../src/agent/journal.js';
import { FunctionRegistry } from '../../src/agent/registry.js';
import { openConsent } from '../../src/app/consent-parts.js';
import type { ProviderChoice } from '../../src/consent/prompt-providers.js';
import { createControlMethods } from '../../src/consent/control-api.js';
import { CONTROL_EVENTS } from '../../src/consent/control-events.js';
import type { PromptView } from '../../src/consent/prompt.js';
import { Type } from '@sinclair/typebox';
import { defineFunction, defineGrantKind, type BlobClient, type FunctionDefinition } from '../../src/sdk/index.js';
import { GrantStore } from '../../src/grants/grant-store.js';
import type { InvokeParams, PermissionLevel } from '../../src/protocol/messages.js';
import { tempDir } from './helpers.js';
import { until } from '../helpers/wait.js';

const ID = { workspaceId: 'ws_demo', userId: 'usr_demo', deviceId: 'dev_demo' };
const LEVELS: PermissionLevel[] = ['public', 'low', 'medium', 'high', 'critical'];
const noBlobs = {} as BlobClient;

/** A `serial` grant kind declared the way a built-in handler would (entries: port paths). */
const serialKind = defineGrantKind({
  kind: 'serial',
  entry: Type.Union([Type.String({ minLength: 1 }), Type.Object({ path: Type.String(), ask: Type.Optional(Type.Literal('always')) }, { additionalProperties: false })]),
  normalize: (e) => (typeof e === 'string' ? { id: e } : { id: e.path, ask: e.ask }),
});

/** With `grants`, the `serial` kind is declared and the ports are granted; without, no kind is declared (resources only ask). */
function rig(provider: ProviderChoice, grants?: Record<string, unknown[]>, opts: { bookkeepingDelayMs?: number } = {}) {
  const t = tempDir();
  const ran: string[] = [];
  const log = pino({ level: 'silent' });
  const registry = new FunctionRegistry();
  const defs = LEVELS.map((level) =>
    defineFunction<{ port: string }, { ok: boolean }>({
      descriptor: {
        id: `test.${level}`, name: `Talk to the ${level} port`, description: 'test', version: '1.0.0', capability_type: 'device',
        access: 'restricted', permission_level: level, confirmation: 'policy',
        risk: { read_only: false, destructive: false, idempotent: true, physical: true },
        input_schema: { type: 'object', properties: { port: { type: 'string' } }, required: ['port'], additionalProperties: false },
        output_schema: { type: 'object' }, timeout_ms_default: 5000, timeout_ms_max: 10000, cancellable: true, locks: [],
      },
      describe: (a) => `Send PING to ${a.port}`,
      resources: (a) => [{ kind: 'serial', id: a.port }],
      run: async () => (ran.push(level), { ok: true }),
    }),
  );
  registry.register('test', defs as unknown as FunctionDefinition<never, unknown>[]);
  registry.settle();
  const journal = new Journal(path.join(t.dir, 'journal.sqlite'), { workspaceId: ID.workspaceId, deviceId: ID.deviceId });
  const consent = openConsent({ data_dir: t.dir, confirmations: { provider, timeout_ms: 60_000 } }, { notify: () => {} });
  const store = new GrantStore();
  if (grants) {
    store.registerKinds('test', [serialKind]);
    assert.deepEqual(store.setConfig(grants), []);
  }
  const dispatcher = new Dispatcher({
    identity: ID, registry, grants: store, journal, consent: consent.gate, observers: [consent.trail], blobs: noBlobs, log, maxConcurrentCalls: 4,
    dedupeRetentionS: 86_400, defaultConfirmTimeoutMs: 60_000, maxOutputBytes: 1 << 20, notify: () => {}, ...opts,
  });
  const api = createControlMethods(consent);
  let n = 0;
  const invoke = (level: PermissionLevel, extra: Partial<InvokeParams> = {}) =>
    dispatcher.invoke({
      call_id: `c-${level}-${++n}`, function: `test.${level}`, arguments: { port: '/dev/ttyUSB0' },
      workspace_id: ID.workspaceId, user_id: ID.userId, device_id: ID.deviceId,
      requester: { kind: 'agent', name: 'Front-desk assistant' }, ...extra,
    });
  const nextPrompt = () => new Promise<PromptView>((r) => consent.events.once(CONTROL_EVENTS.prompt, r));
  const answer = (prompt_id: string, a: string, scope?: string) => api['control.prompts.answer']!({ prompt_id, answer: a, scope }, { authenticated: true });
  return {
    ran, consent, dispatcher, invoke, nextPrompt, answer,
    done: async () => { await dispatcher.shutdown(); consent.close(); journal.close(); t.cleanup(); },
  };
}

test('provider none: each level ends as the policy says, and only allowed calls run', async () => {
  const r = rig('none');
  try {
    const states: Record<string, string> = {};
    for (const level of LEVELS) {
      const o = await r.invoke(level);
      states[level] = `${o.state}/${o.error?.type ?? '-'}`;
    }
    assert.deepEqual(states, {
      public: 'completed/-', low: 'completed/-', medium: 'rejected/confirmation_unavailable',
      high: 'rejected/confirmation_unavailable', critical: 'rejected/confirmation_unavailable',
    });
    assert.deepEqual(r.ran, ['public', 'low']);
  } finally {
    await r.done();
  }
});

test('medium runs without a prompt once the port is granted', async () => {
  const r = rig('none', { serial: ['/dev/ttyUSB0'] });
  try {
    const o = await r.invoke('medium');
    assert.equal(o.state, 'completed');
    assert.deepEqual(o.confirmation, { required: false, decision: 'not_required', decided_by: 'policy', remembered: false });
  } finally {
    await r.done();
  }
});

test('a grant that says ask: always makes even a low call on it ask, and offers no remember', async () => {
  const r = rig('ui', { serial: [{ path: '/dev/ttyUSB0', ask: 'always' }] });
  try {
    const shown = r.nextPrompt();
    const call = r.invoke('low');
    const p = await shown;
    assert.equal(p.rememberable, false);
    assert.equal(p.remember_any, false);
    await r.answer(p.prompt_id, 'allow_once');
    const o = await call;
    assert.equal(o.state, 'completed');
    assert.deepEqual(o.confirmation, { required: true, decision: 'allowed', decided_by: 'user', remembered: false });
  } finally {
    await r.done();
  }
});

test('a resource of a declared kind outside every grant is refused before consent, at every level, with no prompt', async () => {
  const r = rig('ui', { serial: ['/dev/ttyS9'] });
  try {
    let prompts = 0;
    r.consent.events.on(CONTROL_EVENTS.prompt, () => prompts++);
    for (const level of LEVELS) {
      const o = await r.invoke(level);
      assert.equal(`${o.state}/${o.error?.type}/${o.error?.side_effects}`, 'rejected/permission_denied/none', level);
      assert.equal(o.confirmation, undefined);
    }
    assert.equal(prompts, 0);
    assert.deepEqual(r.ran, []);
  } finally {
    await r.done();
  }
});

test('provider ui: the call waits in awaiting_confirmation; allow & remember runs it and skips the next prompt', async () => {
  const r = rig('ui');
  try {
    const shown = r.nextPrompt();
    const first = r.invoke('high');
    const v = await shown;
    assert.equal(v.sentence, 'Send PING to /dev/ttyUSB0');
    assert.deepEqual(r.dispatcher.get(v.call_id), { call_id: v.call_id, state: 'awaiting_confirmation' });
    await r.answer(v.prompt_id, 'allow_remember', 'always');
    const o = await first;
    assert.equal(o.state, 'completed');
    assert.deepEqual(o.confirmation, { required: true, decision: 'allowed', decided_by: 'user', remembered: true });
    const second = await r.invoke('high');
    assert.equal(second.state, 'completed');
    assert.deepEqual(second.confirmation, { required: true, decision: 'allowed', decided_by: 'remembered', remembered: true });
    assert.deepEqual(r.ran, ['high', 'high']);
  } finally {
    await r.done();
  }
});

test('provider ui: a critical function prompts even after "remember"', async () => {
  const r = rig('ui');
  try {
    for (let i = 0; i < 2; i++) {
      const shown = r.nextPrompt();
      const call = r.invoke('critical');
      await r.answer((await shown).prompt_id, 'allow_remember', 'always');
      assert.equal((await call).confirmation?.decided_by, 'user');
    }
  } finally {
    await r.done();
  }
});

test('a prompt that times out ends rejected/confirmation_timeout and the call never runs', async () => {
  const r = rig('ui');
  try {
    const o = await r.invoke('high', { confirm_timeout_ms: 50 });
    assert.equal(o.state, 'rejected');
    assert.equal(o.error?.type, 'confirmation_timeout');
    assert.equal(o.error?.side_effects, 'none');
    assert.equal(o.confirmation?.decision, 'timeout');
    assert.deepEqual(r.ran, []);
  } finally {
    await r.done();
  }
});

test('cancel during the prompt withdraws it and ends cancelled with side_effects none', async () => {
  const r = rig('ui');
  try {
    const shown = r.nextPrompt();
    const call = r.invoke('high');
    const v = await shown;
    const withdrawn = new Promise((res) => r.consent.events.once(CONTROL_EVENTS.promptWithdrawn, res));
    const cancelled = await r.dispatcher.cancel({ call_id: v.call_id });
    assert.equal(cancelled.state, 'cancelled');
    assert.equal(cancelled.error?.side_effects, 'none');
    assert.deepEqual(await withdrawn, { prompt_id: v.prompt_id, call_id: v.call_id, reason: 'cancelled' });
    assert.equal((await call).state, 'cancelled');
    assert.deepEqual(r.ran, []);
    assert.equal(r.consent.queue.size(), 0);
  } finally {
    await r.done();
  }
});

test('a call\'s book-keeping waits for a flush (a scrape, the activity list) or its delay, and runs once', async () => {
  // Held for a minute, so that nothing but the flush can run it, however slow this machine is.
  const held = rig('none', undefined, { bookkeepingDelayMs: 60_000 });
  try {
    assert.equal((await held.invoke('public')).state, 'completed');
    assert.equal(held.consent.audit.list().length, 0, 'not recorded before its delay or a flush');
    held.dispatcher.flushBookkeeping();
    assert.deepEqual(held.consent.audit.list().map((x) => x.function_id), ['test.public'], 'recorded by the flush, synchronously');
    held.dispatcher.flushBookkeeping();
    assert.equal(held.consent.audit.list().length, 1, 'a second flush records nothing twice');
  } finally {
    await held.done();
  }
  // Not flushed: its own timer records it.
  const timed = rig('none', undefined, { bookkeepingDelayMs: 5 });
  try {
    assert.equal((await timed.invoke('public')).state, 'completed');
    await until(() => timed.consent.audit.list().length === 1, 10_000, 'the audit row, on the book-keeping\'s timer');
  } finally {
    await timed.done();
  }
});

test('paused: calls are rejected with paused until resumed; the audit trail records the call', async () => {
  const r = rig('none');
  try {
    r.consent.pause('ui');
    const o = await r.invoke('public');
    assert.deepEqual([o.state, o.error?.type, o.error?.retryable], ['rejected', 'paused', true]);
    r.consent.resume();
    assert.equal((await r.invoke('public')).state, 'completed');
    // A call's audit row is recorded with the book-keeping, after its answer has left (the test above).
    r.dispatcher.flushBookkeeping();
    const rows = r.consent.audit.list();
    assert.deepEqual(rows.map((x) => [x.function_id, x.state, x.error_type]), [['test.public', 'completed', null], ['test.public', 'rejected', 'paused']]);
    assert.deepEqual(rows[0]!.args_summary, { port: '/dev/ttyUSB0' });
    assert.equal(rows[0]!.requester_name, 'Front-desk assistant');
  } finally {
    await r.done();
  }
});
