/**
 * The window after the bridge session stopped for good, against a reference bridge and an agent started as
 * CLI processes, in Debian's Chromium: the device is signed in from the window, then revoked on the
 * bridge's own page (Your devices → Revoke); the window shows why and what to do in its own words (sign in
 * again here, not `aios-device login`) in en, zh-CN and the pseudo-locale, while the console and `/health`'s
 * English `action` keep naming `aios-device login`; signing in again from the window brings the same agent
 * process back online (the advice goes away) and a runtime's call through the bridge completes. A device
 * provisioned by its config and replaced by another copy gets the config's advice, in the window's words.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BrowserContext, type Page } from 'playwright-core';
import WebSocket from 'ws';
import { agentDoc, until, type Proc } from '../helpers/stack.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { normalizeAgentConfig } from '../../src/config/agent-config.js';
import { startAgent, type RunningAgent } from '../../src/app/start-agent.js';
import { silentLogger } from '../../src/base/logger.js';
import { axe, openScreen, shot, unwrappedText } from './page-checks.js';
import { decideSignIn, localRpc, setup, signedOutSetup } from './stack.js';
import { slow } from '../helpers/wait.js';

const DEVICE_NAME = 'Stop advice box';

describe('the window after a revoked sign-in, against CLI-started bridge and agent', () => {
  let dir: string;
  let agent: Proc;
  let bridgeUrl: string;
  let ui: string;
  let localToken: string;
  let context: BrowserContext;
  let page: Page;
  let stack: Awaited<ReturnType<typeof signedOutSetup>> | undefined;
  let rt: RuntimeClient;
  let deviceId: string;
  const problems: string[] = [];
  /** The `control/notification.bridge` the agent's local endpoint broadcast, in order. */
  const bridgeEvents: { bridge: string; stopped?: { type: string; action_key?: string } }[] = [];
  let events: WebSocket | undefined;
  const rpc = localRpc(() => ui, () => localToken);

  /** Waits until the bridge says the device is (or is not) online. */
  const online = (want: boolean) =>
    until(async () => (await rt.device(deviceId).catch(() => ({ online: !want })))['online'] === want, 30_000, want ? 'the device online at the bridge' : 'the device offline at the bridge').catch((e: Error) => {
      throw new Error(`${e.message}; the agent said:\n${agent.err}`);
    });

  /** Starts a sign-in with the window's own button and approves its code on the bridge's page. */
  async function signInFromWindow(button: string): Promise<void> {
    await page.locator('#signin').getByRole('button', { name: button, exact: true }).click();
    await page.locator('#signin[data-state="waiting"]').waitFor();
    const view = await rpc<{ verification_uri_complete: string }>('control.signin.status');
    await decideSignIn(context, view.verification_uri_complete, 'approve');
    await page.locator('#signin-who').waitFor({ timeout: slow(60_000) });
  }

  before(async () => {
    stack = await signedOutSetup('aios-stop-ui-', 'rt_stop', { identity: { device_name: DEVICE_NAME }, handlers: { diagnostics: { enabled: true } } }, { problems });
    ({ dir, agent, bridgeUrl, ui, localToken, context, page } = stack);
    await page.goto(`${ui}/ui/?lang=en#token=${encodeURIComponent(localToken)}`);
    await page.locator('#agent-state[data-state="connected"]').waitFor();
    await page.locator('#signin[data-state="not_signed_in"]').waitFor();
    await signInFromWindow('Sign in');
    deviceId = (JSON.parse(readFileSync(join(dir, 'device', 'login.json'), 'utf8')) as { device_id: string }).device_id;
    rt = new RuntimeClient({ bridge_url: bridgeUrl, token: 'rt_stop', workspace_id: 'ws_b', device_id: deviceId });
    await online(true);
    await page.locator('#bridge-state[data-state="connected"]').waitFor({ timeout: slow(60_000) });
    assert.equal(await page.locator('#stopped').isVisible(), false, 'no stop advice while connected');
    // Listens to the page's notifications like the page does (WS /rpc, the local token as a subprotocol).
    const ws = (events = new WebSocket(`${ui.replace(/^http/, 'ws')}/rpc`, ['aios-local.v1', `bearer.${localToken}`]));
    ws.on('message', (m: Buffer) => {
      const msg = JSON.parse(m.toString()) as { method?: string; params?: (typeof bridgeEvents)[number] };
      if (msg.method === 'control/notification.bridge' && msg.params) bridgeEvents.push(msg.params);
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
  });

  after(async () => {
    events?.close();
    await stack?.stop();
  });

  test('revoked on the bridge page: the window advises its own Sign in; signing in there brings the same agent back online', async () => {
    const pid = agent.child.pid;
    // Revoked by the person on the bridge's page (the approval page's session is still signed in as alice).
    const bridgePage = await context.newPage();
    try {
      await bridgePage.goto(`${bridgeUrl}/device`);
      await bridgePage.getByRole('button', { name: `Revoke ${DEVICE_NAME}`, exact: true }).click();
      await bridgePage.getByRole('status').filter({ hasText: `${DEVICE_NAME} was revoked` }).waitFor();
    } finally {
      await bridgePage.close();
    }

    // The window: why, and to use its own Sign in, with the sign-in screen right below.
    const stopped = page.locator('#stopped[data-type="unauthorized"]');
    await stopped.waitFor({ timeout: slow(60_000) });
    assert.equal(await page.locator('#stopped-title').textContent(), 'Signed out: the bridge no longer accepts this device\'s sign-in');
    const action = (await page.locator('#stopped-action').textContent()) ?? '';
    assert.equal(action, 'It was revoked or has expired. Select Sign in below to sign in again (the bridge address is filled in); AIOS Device reconnects by itself, no restart needed.');
    assert.doesNotMatch(action, /aios-device/, 'the window names no terminal command');
    await page.locator('#signin[data-state="not_signed_in"]').waitFor();
    const signIn = page.locator('#signin').getByRole('button', { name: 'Sign in', exact: true });
    assert.equal(await signIn.isVisible(), true, 'the Sign in the advice names is right there');
    assert.equal(await page.getByLabel('Bridge address').inputValue(), bridgeUrl, 'the address is filled in');
    assert.equal(await page.locator('#account').isVisible(), false);
    // Nobody is signed in any more: the pill says so, not a red "offline" (the box above says why).
    await page.locator('#bridge-state[data-state="not_signed_in"]').waitFor();
    assert.equal(await page.locator('#bridge-state').textContent(), 'Bridge: not signed in');
    assert.equal(await page.locator('#home-connection').textContent(), 'Not signed in: no call can reach this device until you sign in.');
    await shot(page, 'en-stopped-unauthorized');
    await axe(page, 'stopped (unauthorized)');

    // The console and /health keep the command-line advice; /health's English `action` is unchanged on the wire.
    assert.match(agent.err, /agent stopped connecting to the bridge \(unauthorized\)[\s\S]*what to do: Sign in again with `aios-device login --bridge URL`/);
    const health = (await (await fetch(`${ui}/health`)).json()) as { bridge: string; stopped?: { type: string; message: string; action: string; action_key?: string } };
    assert.equal(health.stopped?.type, 'unauthorized');
    assert.match(health.stopped?.action ?? '', /^Sign in again with `aios-device login --bridge URL`/);
    assert.equal(health.stopped?.action_key, 'core.stop.unauthorized.login');
    await online(false);
    await until(() => bridgeEvents.some((e) => e.bridge === 'offline' && e.stopped?.type === 'unauthorized' && e.stopped.action_key === 'core.stop.unauthorized.login'), 30_000, 'control/notification.bridge with the stop');

    // The same advice in Chinese (the language switch), then in the pseudo-locale: nothing outside the catalogue.
    await openScreen(page, 'general');
    await page.locator('#lang').selectOption('zh-CN');
    await page.locator('#stopped-title').filter({ hasText: '已退出登录：桥接服务不再接受此设备的登录' }).waitFor();
    assert.equal(await page.locator('#stopped-action').textContent(), '登录已被撤销或已过期。请点击下方的“登录”重新登录（桥接服务地址已填好）；AIOS 设备会自动重新连接，无需重启。');
    await page.locator('#signin').getByRole('button', { name: '登录', exact: true }).waitFor();
    await shot(page, 'zh-CN-stopped-unauthorized');
    await axe(page, 'zh-CN stopped (unauthorized)');
    await page.goto(`${ui}/ui/?lang=pseudo`);
    await page.locator('#stopped[data-type="unauthorized"]').waitFor();
    await page.locator('#pause:not([disabled])').waitFor();
    assert.deepEqual(await unwrappedText(page), [], 'the stopped screen in the pseudo-locale');
    await page.goto(`${ui}/ui/?lang=en`);
    await stopped.waitFor();

    // Signed in again from the window: the same agent process takes the new tokens and reconnects.
    await signInFromWindow('Sign in');
    await page.locator('#stopped').waitFor({ state: 'hidden', timeout: 60_000 });
    assert.equal(await page.locator('#signin-who').textContent(), `Signed in as usr_alice in ws_b at ${bridgeUrl}`);
    await page.locator('#bridge-state[data-state="connected"]').waitFor({ timeout: slow(60_000) });
    await online(true);
    assert.equal((await rt.call('device.info', {})).record.outcome?.state, 'completed', 'a call through the bridge completes');
    await until(() => bridgeEvents.at(-1)?.bridge === 'connected', 30_000, 'control/notification.bridge: connected again');
    assert.equal(bridgeEvents.at(-1)?.stopped, undefined, 'the notification no longer carries a stop');
    const after = (await (await fetch(`${ui}/health`)).json()) as { bridge: string; stopped?: unknown };
    assert.equal(after.stopped, undefined, '/health no longer reports a stop');
    assert.equal(after.bridge, 'connected');
    assert.equal(agent.child.exitCode, null, 'the agent process never exited');
    assert.equal(agent.child.pid, pid);
    assert.match(agent.err, /new sign-in picked up: reconnecting to the bridge/);
    assert.deepEqual(problems, []);
  });
});

describe('the window after another copy replaced this device (a token from the config)', () => {
  test('replaced: the window says why and what to do in its own words, with no sign-in screen to point to', async () => {
    const s = await setup();
    let other: RunningAgent | undefined;
    try {
      await s.page.goto(`${s.ui.base}/ui/?lang=en#token=${encodeURIComponent(s.endpoint.token)}`);
      await s.page.locator('#bridge-state[data-state="connected"]').waitFor({ timeout: slow(60_000) });
      assert.equal(await s.page.locator('#stopped').isVisible(), false);
      // Another agent with the same device token and identity, in its own data folder: the bridge keeps the newer one.
      const data = join(s.dir, 'agent2');
      mkdirSync(data, { recursive: true, mode: 0o700 });
      other = await startAgent(normalizeAgentConfig(agentDoc(s.dir, s.bridgeUrl, s.tokens, { data_dir: data, local_endpoint: { host: '127.0.0.1', port: 0, socket: false } })), silentLogger());
      await s.page.locator('#stopped[data-type="replaced"]').waitFor({ timeout: slow(60_000) });
      assert.equal(await s.page.locator('#stopped-title').textContent(), 'Another copy of AIOS Device connected as this device');
      assert.equal(await s.page.locator('#stopped-action').textContent(), 'Two devices use the same device id in their config files (identity.device_id). Ask whoever set them up to give each its own, then quit AIOS Device and start it again.');
      assert.equal(await s.page.locator('#signin').isVisible(), false, 'a device provisioned by its config has no sign-in screen');
      assert.equal(s.running.agent.stopped()?.action_key, 'core.stop.replaced.config');
      await axe(s.page, 'stopped (replaced)');
      await openScreen(s.page, 'general');
      await s.page.locator('#lang').selectOption('zh-CN');
      await s.page.locator('#stopped-title').filter({ hasText: '另一个 AIOS 设备副本以此设备的身份连接了' }).waitFor();
      assert.match((await s.page.locator('#stopped-action').textContent()) ?? '', /^两台设备在配置文件中使用了同一个设备 ID/);
      assert.deepEqual(s.problems, []);
    } finally {
      await other?.stop().catch(() => undefined);
      await s.stop();
    }
  });
});
