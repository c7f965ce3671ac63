/**
 * Issue #30, every device: with --device twice, every per-device check runs on each device (a column per
 * device in the report); a second device that is stopped fails the run, two healthy ones pass it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { inProcessStack, ids, until } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { renderHtml } from '../../src/trial/report.js';

test('--device twice: each device is checked; a stopped second device fails client.version on its own column', { timeout: 300_000 }, async () => {
  const second = { ...ids, device_id: 'dev_t2' };
  const token2 = 'dt_' + randomBytes(12).toString('hex');
  const s = await inProcessStack({ bridge: { device_tokens: { [token2]: second } } });
  const agent2 = await s.makeAgent({ bridge: { url: s.url.replace(/^http/, 'ws') + '/v1/device', token: token2 }, identity: { ...second, device_name: 'Second device' }, data_dir: join(s.dir, 'agent2') });
  let stopped = false;
  try {
    await until(() => s.bridge.hub.isOnline('dev_t2'), 10_000, 'second device online');
    const base = { bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id, 'dev_t2'], only: ['client', 'identity', 'faults.timeout', 'extra.duplicate', 'extra.multi_device'], expectWorkspace: ids.workspace_id, expectUser: ids.user_id };
    const healthy = await runTrial(base);
    for (const id of ['client.version', 'identity', 'faults.timeout', 'extra.duplicate']) {
      for (const d of base.devices) {
        const c = healthy.checks.find((x) => x.id === id && x.device === d);
        assert.equal(c?.verdict, 'pass', `${id} on ${d}: ${c?.message}`);
      }
    }
    assert.equal(healthy.checks.find((x) => x.id === 'extra.multi_device')?.verdict, 'pass');
    assert.equal(healthy.ok, true, JSON.stringify(healthy.summary));
    const page = renderHtml(healthy);
    assert.match(page, /<th>device dev_t<\/th><th>device dev_t2<\/th>/, "a column per device");

    await agent2.stop();
    stopped = true;
    await until(() => !s.bridge.hub.isOnline('dev_t2'), 10_000, 'second device offline');
    const broken = await runTrial(base);
    const v2 = broken.checks.find((x) => x.id === 'client.version' && x.device === 'dev_t2')!;
    assert.equal(v2.verdict, 'fail', v2.message);
    assert.equal(broken.checks.find((x) => x.id === 'client.version' && x.device === ids.device_id)?.verdict, 'pass');
    assert.equal(broken.checks.find((x) => x.id === 'faults.timeout' && x.device === 'dev_t2')?.verdict, 'not_run', 'checks on the stopped device do not pass');
    assert.ok(broken.summary.required_failed.includes('client.version'));
    assert.equal(broken.lines.find((l) => l.line === '1')?.verdict, 'fail');
    assert.equal(broken.ok, false);
  } finally {
    if (!stopped) await agent2.stop().catch(() => undefined);
    await s.stop();
  }
});
