/**
 * Issue 27, finding 5, the dispatcher's own part: pause is checked again after a lock wait, even when
 * nothing woke the waiting call at the pause (the agent's `pauseWaiting` is not called here). Real
 * dispatcher, journal and consent gate; A holds the lock until the test lets it go, B waits for it;
 * the user pauses; A finishes; B ends `rejected/paused`, `side_effects: none`, and its handler never runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { pino } from 'pino';
import { Dispatcher } from '../../src/agent/dispatcher.js';
import { Journal } from '../../src/agent/journal.js';
import { FunctionRegistry } from '../../src/agent/registry.js';
import { openConsent } from '../../src/app/consent-parts.js';
import { defineFunction, type BlobClient, type FunctionDefinition } from '../../src/sdk/index.js';
import { tempDir } from './helpers.js';
import { until } from '../helpers/stack.js';

const ID = { workspaceId: 'ws_demo', userId: 'usr_demo', deviceId: 'dev_demo' };

test('a call that waited for a lock across a pause does not start after it', async () => {
  const t = tempDir();
  const ran: string[] = [];
  const started: Record<string, () => void> = {};
  const startedP: Record<string, Promise<void>> = {};
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  for (const k of ['a', 'b']) startedP[k] = new Promise<void>((r) => (started[k] = r));
  const hold = defineFunction<{ who: string }, { ok: boolean }>({
    descriptor: {
      id: 'test.hold', name: 'Hold the bench', description: 'test', version: '1.0.0', capability_type: 'device', access: 'restricted',
      permission_level: 'public', confirmation: 'policy', risk: { read_only: true, destructive: false, idempotent: true, physical: false },
      input_schema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'], additionalProperties: false },
      output_schema: { type: 'object' }, timeout_ms_default: 30_000, timeout_ms_max: 60_000, cancellable: true, locks: ['lab:bench'],
    },
    run: async (a) => {
      ran.push(a.who);
      started[a.who]?.();
      if (a.who === 'a') await held;
      return { ok: true };
    },
  });
  const registry = new FunctionRegistry();
  registry.register('test', [hold] as unknown as FunctionDefinition<never, unknown>[]);
  registry.settle();
  const journal = new Journal(path.join(t.dir, 'journal.sqlite'), { workspaceId: ID.workspaceId, deviceId: ID.deviceId });
  const consent = openConsent({ data_dir: t.dir, confirmations: { provider: 'none', timeout_ms: 60_000 } }, { notify: () => {} });
  const dispatcher = new Dispatcher({
    identity: ID, registry, journal, consent: consent.gate, observers: [consent.trail], blobs: {} as BlobClient, log: pino({ level: 'silent' }), maxConcurrentCalls: 4,
    dedupeRetentionS: 86_400, defaultConfirmTimeoutMs: 60_000, maxOutputBytes: 1 << 20,
    notify: () => {},
  });
  const call = (who: string) => dispatcher.invoke({ call_id: `c-${who}`, function: 'test.hold', arguments: { who }, workspace_id: ID.workspaceId, user_id: ID.userId, device_id: ID.deviceId, requester: { kind: 'agent', name: 'Lab assistant' } });
  try {
    const a = call('a');
    await startedP['a'];
    const b = call('b');
    // B is accepted and waiting for the lock A holds.
    await until(() => {
      try {
        return dispatcher.get('c-b').state === 'accepted';
      } catch {
        return false; // not registered yet
      }
    }, 10_000, 'B waiting for the lock');
    consent.pause('user');
    release();
    const [oa, ob] = await Promise.all([a, b]);
    assert.equal(oa.state, 'completed');
    assert.deepEqual([ob.state, ob.error?.type, ob.error?.side_effects, ob.started_at], ['rejected', 'paused', 'none', null], JSON.stringify(ob));
    assert.deepEqual(ran, ['a'], "B's handler never ran");
  } finally {
    await dispatcher.shutdown();
    consent.close();
    journal.close();
    t.cleanup();
  }
});
