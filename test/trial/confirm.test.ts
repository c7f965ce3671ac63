/**
 * Issue #30, confirmation both ways: allowed → the effect happened; denied → it did not; unanswered → the
 * short confirm_timeout_ms runs out; a policy that pre-allows the high-risk function (no prompt) fails.
 * Answered by the trial itself (--unattended), the check is simulated, never pass.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { inProcessStack, ids } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';

const trial = (s: Awaited<ReturnType<typeof inProcessStack>>, allowEffects: boolean) =>
  runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['confirm'], control: 'local', agentDataDir: join(s.dir, 'agent'), unattended: true, allowEffects });

test('a healthy device: allowed writes the scratch file, denied and unanswered do not; simulated under --unattended', { timeout: 120_000 }, async () => {
  const s = await inProcessStack({});
  try {
    for (const fx of [true, false]) {
      const r = await trial(s, fx);
      const c = r.checks.find((x) => x.id === 'confirm.high_risk')!;
      assert.equal(c.verdict, 'simulated', c.message);
      assert.match(c.message, /denied: no effect; unanswered: confirmation_timeout/);
      assert.match(c.message, /answered by the trial, not a person/);
      const fns = c.evidence.map((x) => (x.request as { function?: string } | undefined)?.function);
      assert.ok(fns.every((f) => f === (fx ? 'files.write_text' : 'diagnostics.confirm')), JSON.stringify(fns));
      assert.equal(c.evidence.length, 3, 'allow, deny, unanswered');
      assert.equal(r.lines.find((l) => l.line === '6')?.verdict, 'simulated');
      assert.equal(r.ok, true);
    }
  } finally {
    await s.stop();
  }
});

test('a policy that pre-allows the high-risk function: no prompt appears, so confirm.high_risk fails', { timeout: 120_000 }, async () => {
  // files.write_text asks by policy (diagnostics.confirm always asks, so no policy can pre-allow it).
  const s = await inProcessStack({ agent: { policy: { 'files.write_text': 'allow' } } });
  try {
    const r = await trial(s, true);
    const c = r.checks.find((x) => x.id === 'confirm.high_risk')!;
    assert.equal(c.verdict, 'fail', c.message);
    assert.match(c.message, /no prompt appeared.*decided by policy/);
    assert.equal(r.ok, false);
  } finally {
    await s.stop();
  }
});
