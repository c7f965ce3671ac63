/**
 * Signing in from the page (issue 19), against a reference bridge and an agent started as CLI processes,
 * the agent not signed in, in Debian's Chromium: the page shows the code and a QR code that decodes to
 * `verification_uri_complete`; approving it on the bridge's own approval page (a second page, signed in
 * as a test user) turns the screen to "signed in as … in …" and the agent connects (a runtime's call
 * through the bridge completes); Deny ends in the denied state; Sign out brings back "not signed in" and
 * the bridge refuses the old tokens. In zh-CN the screen is translated; in the pseudo-locale every
 * visible text is a catalogue string; axe-core finds no serious or critical violation.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import jsqr from 'jsqr';
import { PNG } from 'pngjs';
import WebSocket from 'ws';
import { type BrowserContext, type Page } from 'playwright-core';
import { until, type Proc } from '../helpers/stack.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { axe, shot, unwrappedText } from './page-checks.js';
import { decideSignIn, localRpc, signedOutSetup } from './stack.js';
import { assertCatalogueBlock, rendererFile } from './catalogue-blocks.js';
import { slow } from '../helpers/wait.js';

// jsqr is CommonJS with its function on `default`: under Node's ESM interop that is one level down.
const jsQR = (jsqr as unknown as { default: typeof jsqr.default }).default;

interface SignInView {
  state: string;
  bridge_url?: string;
  user_code?: string;
  verification_uri?: string;
  verification_uri_complete?: string;
  qr?: string;
  workspace_id?: string;
  user_id?: string;
}

/** The text of a QR code in a PNG data URL. */
function decodeQr(dataUrl: string): string | undefined {
  const m = /^data:image\/png;base64,(.+)$/.exec(dataUrl);
  assert.ok(m, 'the QR code is a PNG data URL');
  const png = PNG.sync.read(Buffer.from(m[1]!, 'base64'));
  return jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data;
}

// A check of the catalogue files alone: no browser, bridge or agent needed.
test('the catalogues hold every ui.signin.* key the page uses, in en and zh-CN, as one block', () => {
  const html = rendererFile('index.html');
  const js = rendererFile('signin.ts');
  const used = [...html.matchAll(/data-i18n="(ui\.signin\.[^"]+)"/g), ...js.matchAll(/'(ui\.signin\.[a-z_.]+)'/g)].map((m) => m[1]!);
  assert.ok(used.length > 10, `the screen uses its strings (${used.length})`);
  // One block; the Settings and capture page blocks follow it.
  assertCatalogueBlock(used, (k) => k.startsWith('ui.signin.') || k.startsWith('ui.tray.signin.'), 'sign-in (ui.signin.*, ui.tray.signin.*)');
});

describe('signing in from the page, against CLI-started bridge and agent', () => {
  let dir: string;
  let agent: Proc;
  let bridgeUrl: string;
  let ui: string;
  let localToken: string;
  let context: BrowserContext;
  let page: Page;
  let stack: Awaited<ReturnType<typeof signedOutSetup>> | undefined;
  const problems: string[] = [];
  const data = () => join(dir, 'device');

  const rpc = localRpc(() => ui, () => localToken);

  async function open(query = ''): Promise<void> {
    await page.goto(`${ui}/ui/${query}#token=${encodeURIComponent(localToken)}`);
    await page.locator('#agent-state[data-state="connected"]').waitFor();
  }

  before(async () => {
    // Not signed in: a bridge address to prefill and a token file to keep the sign-in in (this machine has no keychain).
    stack = await signedOutSetup('aios-signin-ui-', 'rt_signin', {
      identity: { device_name: 'Signin test box' },
      handlers: { diagnostics: { enabled: true } },
    }, { problems });
    ({ dir, agent, bridgeUrl, ui, localToken, context, page } = stack);
    // Printed after endpoint.json is written: waited for, not read at once.
    await until(() => /not signed in: sign in from the window \(http:\/\/127\.0\.0\.1:\d+\/ui\/\)/.test(agent.err), 30_000, 'the console says the agent is not signed in');
  });

  after(async () => {
    await stack?.stop();
  });

  test('not signed in: code and QR, approval on the bridge page signs the agent in and it connects', async () => {
    await open();
    const screen = page.locator('#signin');
    await page.locator('#signin[data-state="not_signed_in"]').waitFor();
    await page.getByText('This device is not signed in. Enter the bridge address and sign in.', { exact: true }).waitFor();
    assert.equal(await page.getByLabel('Bridge address').inputValue(), bridgeUrl, 'prefilled from the config');
    const status = await rpc<{ signin: SignInView; paused: boolean }>('control.status');
    assert.equal(status.signin.state, 'not_signed_in', 'control.status reports the sign-in');
    assert.equal(await page.locator('#account').isVisible(), false, 'no Sign out while nobody is signed in');
    await axe(page, 'not signed in');

    await screen.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.locator('#signin[data-state="waiting"]').waitFor();
    await page.getByText('Waiting for approval…', { exact: true }).waitFor();
    const view = await rpc<SignInView>('control.signin.status');
    assert.equal(view.state, 'waiting');
    assert.match(view.user_code ?? '', /^[A-Z]{4}-[A-Z]{4}$/);
    assert.equal(await page.locator('#signin-code').textContent(), view.user_code, 'the code is shown');
    assert.equal(await page.locator('#signin-uri').textContent(), `${bridgeUrl}/device`);
    assert.equal(view.verification_uri_complete, `${bridgeUrl}/device?user_code=${encodeURIComponent(view.user_code!)}`);
    const src = (await page.locator('#signin-qr').getAttribute('src')) ?? '';
    assert.equal(decodeQr(src), view.verification_uri_complete, 'the QR code opens the approval page with the code');
    assert.equal(await page.getByRole('img', { name: `QR code that opens ${view.verification_uri_complete}` }).isVisible(), true);
    assert.ok(await page.getByRole('button', { name: 'Open browser', exact: true }).isVisible());
    await shot(page, 'en-signin-code');
    await axe(page, 'sign-in code');

    // "Open browser" in a plain browser opens the approval page in a new tab.
    const [tab] = await Promise.all([context.waitForEvent('page'), page.getByRole('button', { name: 'Open browser', exact: true }).click()]);
    await tab.waitForLoadState();
    assert.equal(tab.url(), view.verification_uri_complete);
    await tab.close();

    await decideSignIn(context, view.verification_uri_complete!, 'approve');
    const who = page.locator('#signin-who');
    await who.waitFor({ timeout: slow(60_000) });
    assert.equal(await who.textContent(), `Signed in as usr_alice in ws_b at ${bridgeUrl}`);
    await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
    assert.equal(await screen.isVisible(), false, 'the sign-in screen is gone');

    // The agent was started again for the new identity (same endpoint, same token); the page reconnected.
    const state = JSON.parse(readFileSync(join(data(), 'login.json'), 'utf8')) as { device_id: string; workspace_id: string; user_id: string };
    assert.deepEqual([state.workspace_id, state.user_id], ['ws_b', 'usr_alice']);
    const rt = new RuntimeClient({ bridge_url: bridgeUrl, token: 'rt_signin', workspace_id: 'ws_b', device_id: state.device_id });
    await until(async () => (await rt.device(state.device_id).catch(() => ({ online: false })))['online'] === true, 30_000, 'the agent online at the bridge').catch((e: Error) => {
      throw new Error(`${e.message}; the agent said:\n${agent.err}`);
    });
    assert.equal((await rt.call('device.info', {})).record.outcome?.state, 'completed', 'a call through the bridge completes');
    await page.locator('#bridge-state[data-state="connected"]').waitFor({ timeout: slow(60_000) });
    assert.equal((await rpc<{ signin: SignInView }>('control.status')).signin.state, 'signed_in');
    assert.equal(agent.child.exitCode, null, 'one agent process throughout');
    await shot(page, 'en-signin-signed-in');
    await axe(page, 'signed in');
  });

  test('Sign out: not signed in again, and the bridge refuses the old tokens', async () => {
    const secrets = JSON.parse(readFileSync(join(data(), 'tokens.json'), 'utf8')) as { secrets: Record<string, string> };
    const account = Object.keys(secrets.secrets).find((k) => k.endsWith('/tokens'))!;
    const old = JSON.parse(secrets.secrets[account]!) as { access_token: string; refresh_token: string };
    const state = JSON.parse(readFileSync(join(data(), 'login.json'), 'utf8')) as { device_id: string };

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.locator('#signin[data-state="not_signed_in"]').waitFor();
    await page.getByText('This device is not signed in. Enter the bridge address and sign in.', { exact: true }).waitFor();
    assert.equal(await page.locator('#account').isVisible(), false);
    assert.equal(existsSync(join(data(), 'login.json')), false, 'the login record is gone');

    const refresh = await fetch(`${bridgeUrl}/v1/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: old.refresh_token, client_id: 'aios-device' }) });
    assert.equal(refresh.status, 400, 'the old refresh token is refused');
    assert.equal(((await refresh.json()) as { error: string }).error, 'invalid_grant');
    const status = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(bridgeUrl.replace(/^http/, 'ws') + '/v1/device', 'aios-device.v1', { headers: { authorization: `Bearer ${old.access_token}` } });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => {
        ws.close();
        reject(new Error('the bridge accepted a revoked access token'));
      });
      ws.on('error', () => undefined);
    });
    assert.equal(status, 401, 'the old access token is refused');
    const rt = new RuntimeClient({ bridge_url: bridgeUrl, token: 'rt_signin', workspace_id: 'ws_b', device_id: state.device_id });
    await until(async () => (await rt.device(state.device_id).catch(() => ({ online: true })))['online'] === false, 30_000, 'the device offline at the bridge');
    assert.equal((await rpc<{ signin: SignInView }>('control.status')).signin.state, 'not_signed_in');
  });

  test('Deny on the approval page: the page says so and offers to start again', async () => {
    await page.locator('#signin').getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.locator('#signin[data-state="waiting"]').waitFor();
    const view = await rpc<SignInView>('control.signin.status');
    await decideSignIn(context, view.verification_uri_complete!, 'deny');
    await page.locator('#signin[data-state="denied"]').waitFor({ timeout: slow(60_000) });
    await page.getByText('The sign-in was denied on the approval page. Start again for a new code.', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Start again', exact: true }).waitFor();
    assert.equal(await page.locator('#signin-code-box').isVisible(), false, 'the old code is gone');
    await shot(page, 'en-signin-denied');
    await axe(page, 'denied');
  });

  test('a bad bridge address is refused with a typed error, in the page language', async () => {
    await page.getByLabel('Bridge address').fill('ftp://nowhere.invalid');
    await page.locator('#signin').getByRole('button', { name: 'Start again', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'Enter the bridge address as http(s)://host:port.' }).waitFor();
    const bad = await fetch(`${ui}/rpc`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${localToken}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'control.signin.start', params: { bridge_url: 42 } }) });
    const body = (await bad.json()) as { error: { code: number; data: { type: string } } };
    assert.equal(body.error.code, -32602);
    assert.equal(body.error.data.type, 'invalid_arguments');
    const anon = await fetch(`${ui}/rpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'control.signin.start', params: {} }) });
    assert.equal(anon.status, 401, 'the sign-in methods need the local token');
    await page.getByLabel('Bridge address').fill(bridgeUrl);
  });

  test('zh-CN: the sign-in screen in Chinese', async () => {
    await open('?lang=zh-CN');
    await page.locator('#signin').waitFor();
    await page.getByRole('heading', { name: '登录到桥接服务' }).waitFor();
    await page.getByLabel('桥接服务地址').waitFor();
    // Still denied from the test before: the sentence and the button in Chinese.
    await page.getByText('登录请求在批准页面上被拒绝。请重新开始以获取新的验证码。', { exact: true }).waitFor();
    await page.locator('#signin').getByRole('button', { name: '重新开始', exact: true }).click();
    await page.locator('#signin[data-state="waiting"]').waitFor();
    await page.getByText('正在等待批准…', { exact: true }).waitFor();
    await page.getByRole('button', { name: '打开浏览器', exact: true }).waitFor();
    await page.getByRole('button', { name: '取消', exact: true }).waitFor();
    await shot(page, 'zh-CN-signin-code');
    await axe(page, 'zh-CN sign-in code');
    await page.getByRole('button', { name: '取消', exact: true }).click();
    await page.getByText('此设备尚未登录。请输入桥接服务地址并登录。', { exact: true }).waitFor();
  });

  test('pseudo-locale: every visible text of the sign-in screens comes from the catalogue', async () => {
    await open('?lang=pseudo');
    await page.locator('#signin[data-state="not_signed_in"]').waitFor();
    await page.locator('#pause:not([disabled])').waitFor();
    assert.deepEqual(await unwrappedText(page), [], 'not signed in');
    await page.locator('#signin').getByRole('button', { name: '⟦Sign in⟧', exact: true }).click();
    await page.locator('#signin[data-state="waiting"]').waitFor();
    await page.locator('#signin-expires:not(:empty)').waitFor();
    assert.deepEqual(await unwrappedText(page), [], 'waiting with a code');
    const view = await rpc<SignInView>('control.signin.status');
    await decideSignIn(context, view.verification_uri_complete!, 'approve');
    await page.locator('#signin-who').waitFor({ timeout: slow(60_000) });
    await page.locator('#bridge-state[data-state="connected"]').waitFor({ timeout: slow(60_000) });
    assert.deepEqual(await unwrappedText(page), [], 'signed in');
    assert.deepEqual(problems, []);
  });
});
