/**
 * Consent on the real call path: bridge → agent with `confirmations.provider: ui`, answered through the
 * control methods the tray UI uses.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { inProcessStack, until } from '../helpers/stack.js';
import { createControlMethods } from '../../src/consent/index.js';

type Stack = Awaited<ReturnType<typeof inProcessStack>>;

describe('consent on the call path (ui provider)', () => {
  let s: Stack;
  let control: ReturnType<typeof createControlMethods>;
  const ctx = { authenticated: true };
  const prompts = async () => ((await control['control.prompts.list']!({}, ctx)) as { prompts: { prompt_id: string; call_id: string; summary?: string }[] }).prompts;
  before(async () => {
    s = await inProcessStack({ agent: { confirmations: { provider: 'ui', timeout_ms: 60_000 } } });
    control = createControlMethods(s.running.consent);
    await control['control.ui.focus']?.({ focused: true }, ctx);
  });
  after(() => s.stop());

  test('deny → rejected/user_rejected; the handler never ran', async () => {
    const { record } = await s.client.call('diagnostics.confirm', {}, { wait: false });
    const p = await until(async () => (await prompts())[0], 5000, 'prompt');
    assert.equal(p!.call_id, record.call_id);
    assert.equal((await s.client.getCall(record.call_id)).state, 'awaiting_confirmation');
    await control['control.prompts.answer']!({ prompt_id: p!.prompt_id, answer: 'deny' }, ctx);
    const r = await s.client.waitTerminal(record.call_id, 5000);
    assert.equal(r.outcome?.state, 'rejected');
    assert.equal(r.outcome?.error?.type, 'user_rejected');
    assert.equal(r.outcome?.started_at, null);
    assert.equal(r.outcome?.confirmation?.decision, 'denied');
  });

  test('allow once → completed with confirmation { required, allowed, user }', async () => {
    const { record } = await s.client.call('diagnostics.confirm', {}, { wait: false });
    const p = await until(async () => (await prompts())[0], 5000, 'prompt');
    await control['control.prompts.answer']!({ prompt_id: p!.prompt_id, answer: 'allow_once' }, ctx);
    const r = await s.client.waitTerminal(record.call_id, 5000);
    assert.equal(r.outcome?.state, 'completed');
    assert.deepEqual(r.outcome?.confirmation, { required: true, decision: 'allowed', decided_by: 'user', remembered: false });
  });

  test('nobody answers → rejected/confirmation_timeout, never ran', async () => {
    const { record } = await s.client.call('diagnostics.confirm', {}, { confirm_timeout_ms: 300 });
    assert.equal(record.outcome?.state, 'rejected');
    assert.equal(record.outcome?.error?.type, 'confirmation_timeout');
    assert.equal(record.outcome?.started_at, null);
  });

  test('cancel while the prompt is open → cancelled, side_effects none, prompt withdrawn', async () => {
    const { record } = await s.client.call('diagnostics.confirm', {}, { wait: false });
    await until(async () => (await prompts()).length > 0, 5000, 'prompt');
    const c = await s.client.cancel(record.call_id);
    assert.equal(c.outcome?.state, 'cancelled');
    assert.equal(c.outcome?.error?.side_effects, 'none');
    assert.equal((await prompts()).length, 0);
  });

  test('pause → calls are rejected with paused; resume → they run', async () => {
    s.running.consent.pause('test');
    try {
      const { record } = await s.client.call('device.info', {});
      assert.equal(record.outcome?.state, 'rejected');
      assert.equal(record.outcome?.error?.type, 'paused');
      assert.equal(record.outcome?.error?.retryable, true);
    } finally {
      s.running.consent.resume();
    }
    const { record } = await s.client.call('device.info', {});
    assert.equal(record.outcome?.state, 'completed');
  });
});
