/**
 * Issue #30: verdicts and the run's rule. A checklist line shows the weakest verdict of its required checks
 * (never PASS beside a required check that did not run), the JSON has the lines, --skip shows as skipped,
 * and a prompt the trial answered itself is simulated, not a pass.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { inProcessStack, ids } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { renderHtml } from '../../src/trial/report.js';
import { slow } from '../helpers/wait.js';

test('a line with a passed and a not-run required check is not_run, in the JSON and the HTML; the run fails', { timeout: slow(120_000) }, async () => {
  const s = await inProcessStack({});
  try {
    const base = { bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id] };
    const r = await runTrial({ ...base, only: ['client.version', 'faults'] });
    const v = (id: string) => r.checks.find((c) => c.id === id)?.verdict;
    assert.equal(v('faults.timeout'), 'pass');
    assert.equal(v('faults.device_offline'), 'not_run');
    const line5 = r.lines.find((l) => l.line === '5')!;
    assert.equal(line5.verdict, 'not_run', JSON.stringify(line5));
    assert.ok(line5.checks.includes('faults.timeout') && line5.checks.includes('faults.device_offline'));
    assert.equal(r.lines.find((l) => l.line === '1')!.verdict, 'pass');
    assert.equal(r.ok, false);
    const row = renderHtml(r).split('<tr>').find((x) => x.startsWith('<td>5</td>'))!;
    assert.match(row, /badge not_run/);
    assert.doesNotMatch(row, /badge pass/);

    // --skip shows the check as skipped; a skipped check does not fail the run; --allow-not-run takes a prefix.
    const k = await runTrial({ ...base, only: ['client.version', 'faults'], skip: ['faults.timeout'], allowNotRun: ['faults'] });
    assert.equal(k.checks.find((c) => c.id === 'faults.timeout')?.verdict, 'skipped');
    assert.deepEqual(k.summary.required_failed, []);
    assert.equal(k.ok, true);
    assert.equal(k.lines.find((l) => l.line === '5')!.verdict, 'not_run', 'allowed to be not run is still not run on its line');
  } finally {
    await s.stop();
  }
});

test('--unattended: the trial answered the prompt itself, so confirm.high_risk and line 6 are simulated, and the run may pass', { timeout: slow(120_000) }, async () => {
  const s = await inProcessStack({});
  try {
    const r = await runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['client.version', 'confirm'], control: 'local', agentDataDir: join(s.dir, 'agent'), unattended: true });
    const c = r.checks.find((x) => x.id === 'confirm.high_risk')!;
    assert.equal(c.verdict, 'simulated', c.message);
    assert.match(c.message, /answered by the trial, not a person/);
    assert.equal(r.lines.find((l) => l.line === '6')!.verdict, 'simulated');
    assert.equal(r.summary.simulated, 1);
    assert.equal(r.ok, true, JSON.stringify(r.summary));
  } finally {
    await s.stop();
  }
});
