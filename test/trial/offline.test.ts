/**
 * Issue #30, faults for real: with --control local the trial takes the device's link down through the new
 * control method control.session.offline and observes the bridge's 409 device_offline; the device comes back.
 * faults.bridge_unreachable reads the device's own status while its link is down; without control it is
 * simulated (the CLI against a closed port stands in) or not run, never a pass.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CLI, inProcessStack, ids, until } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { LocalControl } from '../../src/trial/local-control.js';
import { slow } from '../helpers/wait.js';

test('faults.device_offline takes the link down with control.session.offline and observes 409 device_offline', { timeout: slow(180_000) }, async () => {
  const s = await inProcessStack({});
  try {
    const agentDir = join(s.dir, 'agent');
    // Bad input is a typed error and leaves the link up.
    const control = await LocalControl.connect(agentDir);
    try {
      for (const seconds of [0, 1.5, 'x', 301]) await assert.rejects(control.call('control.session.offline', { seconds }), /seconds must be a whole number from 1 to 300/);
      assert.equal(s.bridge.hub.isOnline(ids.device_id), true);
    } finally {
      control.close();
    }
    const r = await runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['faults.device_offline'], control: 'local', agentDataDir: agentDir });
    const c = r.checks.find((x) => x.id === 'faults.device_offline')!;
    assert.equal(c.verdict, 'pass', c.message);
    assert.match(c.message, /HTTP 409 device_offline while the link was down/);
    assert.match(c.message, /the call in flight ended/);
    assert.ok(c.evidence.some((x) => x.label.startsWith('take the link down')));
    await until(() => s.bridge.hub.isOnline(ids.device_id), 20_000, 'the device is back');
  } finally {
    await s.stop();
  }
});

test('faults.bridge_unreachable: with control the device\'s own status says it is not connected while its link is down; without control never a pass', { timeout: slow(180_000) }, async () => {
  const s = await inProcessStack({});
  try {
    const base = { bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['faults.bridge_unreachable'] };
    const r = await runTrial({ ...base, control: 'local', agentDataDir: join(s.dir, 'agent') });
    const c = r.checks.find((x) => x.id === 'faults.bridge_unreachable')!;
    assert.equal(c.verdict, 'pass', c.message);
    assert.match(c.message, /while the link was down, the device's own status \((offline|connecting)/);
    assert.match(c.message, /agent's bridge connection: (offline|connecting)/, 'the words aios-device status prints');
    const seen = c.evidence.find((x) => x.label.startsWith("the device's own status"));
    assert.ok(seen && (seen.response as { bridge?: string }).bridge !== 'connected', JSON.stringify(c.evidence));
    await until(() => s.bridge.hub.isOnline(ids.device_id), 20_000, 'the device is back');

    // Without control the trial cannot take the bridge from the device: the CLI's own error stands in.
    const cli = { node: process.execPath, args: ['--import', 'tsx', CLI] };
    const stood = (await runTrial({ ...base, cli })).checks.find((x) => x.id === 'faults.bridge_unreachable')!;
    assert.equal(stood.verdict, 'simulated', stood.message);
    assert.match(stood.message, /cannot reach the bridge at http:\/\/127\.0\.0\.1:\d+/);
    const none = (await runTrial(base)).checks.find((x) => x.id === 'faults.bridge_unreachable')!;
    assert.equal(none.verdict, 'not_run', none.message);
    assert.match(none.message, /--control local/);
  } finally {
    await s.stop();
  }
});
