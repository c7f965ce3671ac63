/**
 * Issue #30: checks are a table with preconditions, so `--only X` runs what X needs itself; identity is
 * compared only with what the tester expects.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { inProcessStack, ids } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { slow } from '../helpers/wait.js';

test('--only confirm.high_risk runs client.version first itself and then observes the prompt', { timeout: slow(120_000) }, async () => {
  const s = await inProcessStack({});
  try {
    const r = await runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['confirm.high_risk'], control: 'local', agentDataDir: join(s.dir, 'agent'), unattended: true });
    assert.deepEqual(r.checks.map((c) => c.id), ['client.version', 'confirm.high_risk']);
    const pre = r.checks[0]!;
    assert.equal(pre.verdict, 'pass', pre.message);
    assert.equal(pre.precondition, true, 'the report says client.version ran as a precondition');
    const c = r.checks[1]!;
    assert.notEqual(c.verdict, 'not_run', c.message);
    assert.equal(c.verdict, 'simulated', c.message);
  } finally {
    await s.stop();
  }
});

test('identity is inconclusive with nothing to compare with, fails on another workspace or user, passes on the expected ones', { timeout: slow(120_000) }, async () => {
  const s = await inProcessStack({});
  try {
    const base = { bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['identity'] };
    const v = async (extra: Record<string, string>) => (await runTrial({ ...base, ...extra })).checks.find((c) => c.id === 'identity')!;
    const none = await v({});
    assert.equal(none.verdict, 'inconclusive', none.message);
    assert.match(none.message, /--expect-workspace/);
    assert.equal((await v({ expectWorkspace: 'ws_other' })).verdict, 'fail');
    assert.equal((await v({ expectWorkspace: ids.workspace_id, expectUser: 'usr_other' })).verdict, 'fail');
    const ok = await v({ expectWorkspace: ids.workspace_id, expectUser: ids.user_id });
    assert.equal(ok.verdict, 'pass', ok.message);
  } finally {
    await s.stop();
  }
});
