/**
 * Runs inside scripts/with-keyring.sh (see agent-e2e.test.ts). The reference bridge as `aios-device
 * bridge` starts it (startBridge: device login mounted, keys pinned), the `login` command as its own process approved in Chromium, then the
 * agent started from that login (tokens from gnome-keyring) serving a runtime's call.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { chromium, type BrowserContext } from 'playwright-core';
import { Agent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/base/logger.js';
import type { FatalStop } from '../../src/agent/session.js';
import { startBridge, type RunningBridge } from '../../src/app/start-bridge.js';
import { normalizeAgentConfig } from '../../src/config/agent-config.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { startAgent, type RunningAgent } from '../../src/app/start-agent.js';
import { until } from '../helpers/stack.js';
import { tempDir, testUsers } from './helpers.js';
import { CHROMIUM_ARGS, reachDecision, startLogin, type LoginRun } from './login-process.js';

interface Running {
  agent: Agent;
  deviceId: string;
  fatal: Promise<FatalStop>;
}

describe('login, then the agent connects and serves calls', () => {
  const tmp = tempDir('aios-e2e-');
  let bridge: RunningBridge;
  let bridgeUrl: string;
  let context: BrowserContext;
  const runs: LoginRun[] = [];
  const agents: RunningAgent[] = [];

  before(async () => {
    assert.equal(process.env['AIOS_KEYRING_SANDBOX'], '1');
    assert.ok(process.env['HOME']?.startsWith(tmpdir()));
    const config = normalizeBridgeConfig({
      data_dir: join(tmp.dir, 'bridge'),
      listen: { host: '127.0.0.1', port: 0 },
      users: await testUsers(),
      runtime_tokens: { rt_b: { workspace_id: 'ws_b' }, rt_a: { workspace_id: 'ws_a' } },
      device_poll_interval_s: 0,
    });
    bridge = await startBridge(config, silentLogger());
    bridgeUrl = bridge.url;
    context = await chromium.launchPersistentContext(join(tmp.dir, 'profile'), { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
  });

  after(async () => {
    for (const a of agents) await a.stop().catch(() => undefined);
    for (const r of runs) if (r.child.exitCode === null) r.child.kill();
    await context?.close();
    await bridge?.stop();
    tmp.remove();
  });

  async function loginAndStart(name: string): Promise<Running> {
    const dataDir = join(tmp.dir, name.replace(/\W/g, '-'));
    const run = startLogin(bridgeUrl, dataDir, name);
    runs.push(run);
    const page = await context.newPage();
    await reachDecision(page, run, 'alice', name);
    await page.selectOption('#workspace_id', 'ws_b');
    await page.click('#approve');
    // Close only once the approval's answer page is there: closing mid-navigation can hang Playwright.
    assert.match((await page.textContent('#result')) ?? '', new RegExp(`${name} is approved for workspace ws_b; it connects when its agent runs`));
    await page.close();
    assert.equal(await run.exit, 0, run.stderr());

    // Started as `aios-device run` starts it: identity, bridge URL and tokens come from the login.
    const config = normalizeAgentConfig({ data_dir: dataDir, local_endpoint: { enabled: false } });
    const running = await startAgent(config, silentLogger(), { handlers: ['device'], backoff: { baseMs: 20, capMs: 100, resetAfterMs: 60_000 } });
    agents.push(running);
    const deviceId = running.agent.config.identity!.device_id!;
    const fatal = new Promise<FatalStop>((resolve) => running.agent.once('fatal', resolve));
    await until(() => bridge.server.hub.isOnline(deviceId), 10_000, `${name} online`);
    return { agent: running.agent, deviceId, fatal };
  }

  async function call(runtimeToken: string, workspaceId: string, deviceId: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${bridgeUrl}/v1/calls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${runtimeToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workspace_id: workspaceId, device_id: deviceId, function: 'device.info', arguments: {}, wait: true }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  let first: Running;
  let second: Running;

  it('after login the agent connects with its keychain tokens and a call completes', async () => {
    first = await loginAndStart('Front-desk PC');
    const r = await call('rt_b', 'ws_b', first.deviceId);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body['state'], 'completed', JSON.stringify(r.body));
    // The card from hello verifies with the device key the bridge pinned at login.
    const device = (await (await fetch(`${bridgeUrl}/v1/devices/${first.deviceId}`, { headers: { authorization: 'Bearer rt_b' } })).json()) as Record<string, unknown>;
    assert.equal(device['adapter_card_verified'], true, JSON.stringify(device['adapter_card_problem']));
  });

  it('a second device of the same user works independently, and both are listed', async () => {
    second = await loginAndStart('Lab laptop');
    const r = await call('rt_b', 'ws_b', second.deviceId);
    assert.equal(r.body['state'], 'completed', JSON.stringify(r.body));
    const res = await fetch(`${bridgeUrl}/v1/devices?workspace_id=ws_b`, { headers: { authorization: 'Bearer rt_b' } });
    const listed = JSON.stringify(await res.json());
    assert.ok(listed.includes(first.deviceId) && listed.includes(second.deviceId), listed);
  });

  it('a runtime of another workspace never reaches the device', async () => {
    const other = await call('rt_a', 'ws_a', second.deviceId);
    assert.equal(other.status, 404, JSON.stringify(other.body));
    const spoofed = await call('rt_a', 'ws_b', second.deviceId);
    assert.notEqual(spoofed.status, 200);
    assert.notEqual(spoofed.status, 202);
  });

  it('revoking the first device drops its session; its reconnect ends unauthorized; the second keeps working', async () => {
    assert.equal(await bridge.oauth!.revokeDevice(first.deviceId), true);
    const stop = await first.fatal;
    assert.equal(stop.type, 'unauthorized');
    assert.equal(bridge.server.hub.isOnline(first.deviceId), false);
    const r = await call('rt_b', 'ws_b', second.deviceId);
    assert.equal(r.body['state'], 'completed', JSON.stringify(r.body));
  });
});
