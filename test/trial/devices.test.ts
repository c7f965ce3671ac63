/**
 * Issue #30, every device: with --device twice, every per-device check runs on each device (a column per
 * device in the report); a second device that is stopped, or outdated (an older client the bridge refuses),
 * fails the run; two healthy ones pass it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { inProcessStack, ids, until } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { renderHtml } from '../../src/trial/report.js';
import { APP_VERSION } from '../../src/version.js';
import { slow } from '../helpers/wait.js';

test('--device twice: each device is checked; a stopped second device fails client.version on its own column', { timeout: slow(300_000) }, async () => {
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

test('--device twice: a second device with an older client than the bridge accepts fails client.version (client_outdated) on its own column', { timeout: slow(300_000) }, async () => {
  const second = { ...ids, device_id: 'dev_t2' };
  const token2 = 'dt_' + randomBytes(12).toString('hex');
  // The bridge accepts this release (min 0.1.0); the second device announces an older one, as an old install would.
  const s = await inProcessStack({ bridge: { device_tokens: { [token2]: second }, min_client_version: APP_VERSION } });
  const agent2 = await s.makeAgent({ bridge: { url: s.url.replace(/^http/, 'ws') + '/v1/device', token: token2 }, identity: { ...second, device_name: 'Old device' }, data_dir: join(s.dir, 'agent2') });
  try {
    const hello = agent2.agent.hello.bind(agent2.agent);
    agent2.agent.hello = () => ({ ...hello(), client: { ...hello().client, version: '0.0.9' } });
    agent2.agent.session?.dropAndReconnect();
    await until(async () => ((await s.client.device('dev_t2').catch(() => ({}) as Record<string, unknown>))['last_refused_hello'] as { type?: string } | undefined)?.type === 'client_outdated', 20_000, 'the bridge refuses the old client');
    const r = await runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id, 'dev_t2'], only: ['client', 'identity', 'extra.duplicate', 'extra.client_outdated'], expectWorkspace: ids.workspace_id, expectUser: ids.user_id });
    const v2 = r.checks.find((x) => x.id === 'client.version' && x.device === 'dev_t2')!;
    assert.equal(v2.verdict, 'fail', v2.message);
    assert.match(v2.message, /client_outdated: the device's client 0\.0\.9 is below the bridge's minimum/);
    assert.equal(r.checks.find((x) => x.id === 'client.version' && x.device === ids.device_id)?.verdict, 'pass');
    assert.equal(r.checks.find((x) => x.id === 'extra.client_outdated' && x.device === 'dev_t2')?.verdict, 'pass', 'the bridge told the old client so');
    for (const id of ['identity', 'extra.duplicate']) assert.equal(r.checks.find((x) => x.id === id && x.device === 'dev_t2')?.verdict, 'not_run', `${id} does not pass on the outdated device`);
    assert.ok(r.summary.required_failed.includes('client.version'));
    assert.equal(r.lines.find((l) => l.line === '1')?.verdict, 'fail');
    assert.equal(r.ok, false);
  } finally {
    await agent2.stop().catch(() => undefined);
    await s.stop();
  }
});
