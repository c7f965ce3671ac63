/**
 * The approval page in the person's language (issue 31 item 4): the browser's Accept-Language chooses en or
 * zh-CN, the page's switch overrides it and is remembered, every screen of a whole sign-in → approve → revoke
 * pass reads in one language (no Latin phrase of three words in zh-CN, no Chinese in en), the device list tells
 * devices apart (id, platform, last seen, online), and approval says the device connects when its agent runs.
 * In Chromium, each screen in each language passes axe-core and is screenshotted to
 * test-artifacts/screens/<locale>/approval-*.png.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { login } from '../../src/identity/login-client.js';
import { FileSecretStore } from '../../src/identity/secret-store.js';
import { localeFromAcceptLanguage } from '../../src/bridge/oauth/page-locale.js';
import { signInDisabledMount } from '../../src/bridge/sign-in-disabled.js';
import { hanRuns, latinPhrases, readableText } from '../helpers/script-check.js';
import { PageClient, startOAuthBridge, tempDir, type OAuthBridge } from './helpers.js';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS } from './login-process.js';
import { axe, shot } from '../renderer/page-checks.js';
import { slow } from '../helpers/wait.js';

/** Starts a login and resolves the user code it prints. */
function startLogin(bridgeUrl: string, dir: string, deviceName: string): { code: Promise<string>; done: Promise<unknown> } {
  const out = new PassThrough();
  let text = '';
  const code = new Promise<string>((resolve) => {
    out.on('data', (d: Buffer) => {
      text += d.toString();
      const m = /enter the code\s+([A-Z]{4}-[A-Z]{4})/.exec(text);
      if (m) resolve(m[1]!);
    });
  });
  const done = login({ bridgeUrl, dataDir: dir, store: new FileSecretStore(`${dir}-secrets.json`), clientVersion: '0.1.0', deviceName, out, openBrowser: false, qr: false });
  return { code, done };
}

/** Asserts the page reads in `locale` only; `params` are values the test passed in (names, codes). */
function assertOneLanguage(html: string, locale: 'en' | 'zh-CN', params: string[], what: string): void {
  assert.match(html, new RegExp(`<html lang="${locale}"`), `${what}: html lang`);
  const text = readableText(html, params);
  if (locale === 'zh-CN') assert.deepEqual(latinPhrases(text), [], `${what}: English phrases in the zh-CN page`);
  else assert.deepEqual(hanRuns(text), [], `${what}: Chinese in the en page`);
}

describe('the approval page speaks the person’s language', () => {
  let bridge: OAuthBridge;
  const tmp = tempDir();
  const online = new Set<string>();
  before(async () => {
    bridge = await startOAuthBridge({ is_online: (d) => online.has(d.device_id) });
  });
  after(async () => {
    await bridge.close();
    tmp.remove();
  });

  it('Accept-Language decides, in the browser’s order of preference', () => {
    assert.equal(localeFromAcceptLanguage('zh-CN,zh;q=0.9,en;q=0.8'), 'zh-CN');
    assert.equal(localeFromAcceptLanguage('en-GB,en;q=0.9'), 'en');
    assert.equal(localeFromAcceptLanguage('fr-FR, zh-TW;q=0.5'), 'zh-CN');
    assert.equal(localeFromAcceptLanguage('en;q=0.4, zh-Hans;q=0.9'), 'zh-CN');
    assert.equal(localeFromAcceptLanguage('de'), 'en');
    assert.equal(localeFromAcceptLanguage(undefined), 'en');
  });

  for (const locale of ['zh-CN', 'en'] as const) {
    it(`a whole pass in ${locale}: sign in, approve, the device list, revoke`, async () => {
      const header = locale === 'zh-CN' ? 'zh-CN,zh;q=0.9,en;q=0.5' : 'en-US,en;q=0.9';
      const page = new PageClient(bridge.url, { 'accept-language': header });
      const name = `box-${locale}`;
      const l = startLogin(bridge.url, `${tmp.dir}/${locale}`, name);
      const code = await l.code;
      const params = [name, code, 'alice', 'ws_a', 'ws_b'];

      const signIn = await page.get(`/device?user_code=${code}`);
      assertOneLanguage(signIn.body, locale, params, 'sign-in');
      const wrong = await page.post('/device/signin', { csrf: PageClient.csrf(signIn.body), username: 'alice', password: 'nope', user_code: code });
      assert.equal(wrong.status, 401);
      assert.match(wrong.body, locale === 'zh-CN' ? /用户名或密码不正确/ : /Wrong user name or password/);
      assertOneLanguage(wrong.body, locale, params, 'wrong password');

      const approve = await page.post('/device/signin', { csrf: PageClient.csrf(wrong.body), username: 'alice', password: 'alice-pw', user_code: code });
      assert.match(approve.body, /id="approve"/);
      assertOneLanguage(approve.body, locale, params, 'approve');

      const done = await page.post('/device/decision', { csrf: PageClient.csrf(approve.body), user_code: code, action: 'approve', workspace_id: 'ws_b' });
      assertOneLanguage(done.body, locale, params, 'approved');
      assert.match(done.body, locale === 'zh-CN' ? /它的代理运行时就会连接/ : /it connects when its agent runs/);
      assert.doesNotMatch(done.body, /is now connected/);
      const device = ((await l.done) as { device_id: string }).device_id;

      // The list tells devices apart and says which is connected now.
      online.add(device);
      const list = await page.get('/device');
      assertOneLanguage(list.body, locale, params, 'device list');
      const row = new RegExp(`<tr><td>${name}</td><td><code>${device}</code></td><td>[^<]+</td><td>ws_b</td>\\s*<td>[^<]+</td><td>${locale === 'zh-CN' ? '在线' : 'online'}</td>`);
      assert.match(list.body, row);
      online.delete(device);
      assert.match((await page.get('/device')).body, locale === 'zh-CN' ? /<td>离线<\/td>/ : /<td>offline<\/td>/);

      const revoked = await page.post('/device/revoke', { csrf: PageClient.csrf(list.body), device_id: device });
      assertOneLanguage(revoked.body, locale, params, 'revoked');
      const unknown = await page.get('/device?user_code=BCDF-GHJK');
      assert.equal(unknown.status, 404);
      assertOneLanguage(unknown.body, locale, params.concat('BCDF-GHJK'), 'unknown code');
    });
  }

  it('in Chromium, every approval screen in en and zh-CN passes axe-core and is screenshotted', { timeout: slow(180_000) }, async () => {
    for (const locale of ['en', 'zh-CN'] as const) {
      const context = await chromium.launchPersistentContext(`${tmp.dir}/profile-${locale}`, { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS, locale });
      try {
        const page = await context.newPage();
        const l = startLogin(bridge.url, `${tmp.dir}/shots-${locale}`, `desk-${locale}`);
        const code = await l.code;
        await page.goto(`${bridge.url}/device?user_code=${code}`);
        assert.equal(await page.getAttribute('html', 'lang'), locale);
        await axe(page, `${locale} sign-in`);
        await shot(page, `${locale}/approval-signin`);
        await page.fill('#username', 'bob');
        await page.fill('#password', 'bob-pw');
        await page.click('#signin');
        await page.waitForSelector('#approve');
        await axe(page, `${locale} approve`);
        await shot(page, `${locale}/approval-approve`);
        await page.click('#approve');
        await page.waitForSelector('#result');
        await axe(page, `${locale} approved`);
        await shot(page, `${locale}/approval-done`);
        await l.done;
        await page.goto(`${bridge.url}/device`);
        await page.waitForSelector('#devices');
        await axe(page, `${locale} devices`);
        await shot(page, `${locale}/approval-devices`);
      } finally {
        await context.close();
      }
    }
  });

  it('the switch overrides the browser and is remembered; a bridge without sign-in says so in the language asked', async () => {
    const page = new PageClient(bridge.url, { 'accept-language': 'zh-CN' });
    assert.match((await page.get('/device')).body, /<html lang="zh-CN"/);
    const switched = await page.get('/device?lang=en');
    assert.match(switched.body, /<html lang="en"/);
    assert.match((await page.get('/device')).body, /<html lang="en"/, 'the switch is remembered');
    assert.match(switched.body, /<a href="\/device\?lang=zh-CN" lang="zh-CN" hreflang="zh-CN">中文<\/a>/);

    const server = createServer((req, res) => void signInDisabledMount(req, res, new URL(req.url ?? '/', 'http://x')));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const [lang, locale] of [['zh-CN', 'zh-CN'], ['en', 'en']] as const) {
        const html = await (await fetch(`${base}/device`, { headers: { accept: 'text/html', 'accept-language': lang } })).text();
        assertOneLanguage(html, locale, [], `sign-in disabled (${lang})`);
        assert.match(html, /<code>aios-device hash-password<\/code>/);
      }
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
