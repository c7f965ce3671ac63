/**
 * Issue #30: `faults.device_offline` must not pass on a 404 for a made-up device id; with no offline device
 * to address it is not run (and, being required, fails the run unless --allow-not-run names it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inProcessStack, ids } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { slow } from '../helpers/wait.js';

test('faults.device_offline with no offline device is not run, never passed on an unknown id\'s 404', { timeout: slow(120_000) }, async () => {
  const s = await inProcessStack({});
  try {
    const base = { bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['client.version', 'faults.device_offline'] };
    const r = await runTrial(base);
    const c = r.checks.find((x) => x.id === 'faults.device_offline')!;
    assert.equal(c.verdict, 'not_run', c.message);
    assert.match(c.message, /--control local/);
    assert.deepEqual(r.summary.required_failed, ['faults.device_offline']);
    assert.equal(r.ok, false);
    const allowed = await runTrial({ ...base, allowNotRun: ['faults.device_offline'] });
    assert.equal(allowed.ok, true);
  } finally {
    await s.stop();
  }
});
