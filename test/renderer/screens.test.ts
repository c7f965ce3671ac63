/**
 * Every screen of the window, in `en` and `zh-CN`, against a bridge and an agent started by the CLI as
 * separate processes, in one Debian Chromium, one step after another: sign-in (code and QR), a high-risk
 * prompt on the Confirmations screen, Home with the latest calls, Activity, one call's details, Shares &
 * devices, Functions, General, About, and the capture page. Each screen is opened from the navigation,
 * screenshotted to `test-artifacts/screens/<locale>/<screen>.png` (800 px wide; .ci/run keeps them; the user
 * guides show copies from docs/images/screens/), passes axe-core (no serious or critical violation), reads in
 * one language (zh-CN: no Latin-script phrase of three words or more outside ids in `<code>`, agent data
 * and the test's own parameters; en: no Chinese outside the language picker's names), and in a third run in
 * the pseudo-locale shows no visible text that did not come from a catalogue.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type BrowserContext, type Locator, type Page } from 'playwright-core';
import { until } from '../helpers/stack.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { decideSignIn, localRpc, signedOutSetup } from './stack.js';
import { SCREENS, axe, openScreen, unwrappedText, visibleWords } from './page-checks.js';
import { hanRuns, latinPhrases } from '../helpers/script-check.js';
import { assertCatalogueBlock, rendererFile } from './catalogue-blocks.js';
import { slow } from '../helpers/wait.js';

/** Wide enough for every screen, small enough for the user guide's pictures. */
const VIEWPORT = { width: 800, height: 900 };

/** The screens each locale run writes (the user guide shows them). */
export const SCREEN_NAMES = ['home', 'prompt', 'activity', 'details', 'shares', 'functions', 'general', 'about', 'signin', 'capture'] as const;
type ScreenName = (typeof SCREEN_NAMES)[number];

// A check of the catalogue files alone: no browser, bridge or agent needed.
test('the capture page uses only ui.capture.* keys that both catalogues hold, as one block at the end', () => {
  const html = rendererFile('capture.html');
  const js = rendererFile('capture.ts');
  const used = [...html.matchAll(/data-i18n="([^"]+)"/g), ...js.matchAll(/'(ui\.[a-z_.]+)'/g), ...js.matchAll(/`(ui\.capture\.device)\.\$\{kind\}`/g)].map((m) => m[1]!);
  assert.ok(used.length >= 10, `the capture page uses its catalogue (${used.length})`);
  const keys = used.flatMap((k) => (k === 'ui.capture.device' ? ['ui.capture.device.camera', 'ui.capture.device.microphone'] : [k]));
  assert.ok(keys.every((k) => k.startsWith('ui.capture.')), `only ui.capture.* keys: ${keys.join(', ')}`);
  assertCatalogueBlock(keys, (k) => k.startsWith('ui.capture.'), 'ui.capture.*', true);
});

// Without a browser: each user guide shows every screen, from its own copy inside the repository.
test('the user guides show every screen and bridge page of their language, from docs/images/screens/<locale>/', () => {
  const root = join(import.meta.dirname, '..', '..');
  for (const [locale, guide] of [['en', 'user-guide.md'], ['zh-CN', 'user-guide.zh-CN.md']] as const) {
    const text = readFileSync(join(root, 'docs', guide), 'utf8');
    // The window's screens, and the bridge's pages a person meets (test/login/approval-languages.test.ts and
    // test/trial/console.test.ts write those screenshots).
    for (const name of [...SCREEN_NAMES, 'bridge-approval-approve', 'bridge-approval-devices', 'bridge-console']) {
      const image = `images/screens/${locale}/${name}.png`;
      assert.ok(text.includes(`](${image})`), `${guide} shows ${image}`);
      assert.ok(statSync(join(root, 'docs', image)).size > 1000, `docs/${image} is a real image`);
    }
  }
});

describe('every screen in en and zh-CN, against CLI-started bridge and agent', () => {
  let dir: string;
  let bridgeUrl: string;
  let ui: string;
  let localToken: string;
  let context: BrowserContext;
  let page: Page;
  let stack: Awaited<ReturnType<typeof signedOutSetup>> | undefined;
  const problems: string[] = [];
  const written: string[] = [];
  const data = () => join(dir, 'device');

  const rpc = localRpc(() => ui, () => localToken);

  /** What the test itself passed in (names, ids, addresses): parameters, not the page's words. */
  const params: string[] = [];

  /** Screenshot (en, zh-CN) or the catalogue check (pseudo), axe-core and one language, for one screen. */
  async function screen(p: Page, locale: string, name: ScreenName, part?: Locator): Promise<void> {
    if (locale === 'pseudo') {
      assert.deepEqual(await unwrappedText(p), [], `${name}: every visible text from a catalogue`);
      return;
    }
    const words = await visibleWords(p, params);
    if (locale === 'zh-CN') assert.deepEqual(latinPhrases(words), [], `zh-CN ${name}: no Latin-script phrase of three words or more`);
    else assert.deepEqual(hanRuns(words), [], `en ${name}: no Chinese`);
    const folder = join(SCREENS, locale);
    mkdirSync(folder, { recursive: true });
    const file = join(folder, `${name}.png`);
    if (part) await part.screenshot({ path: file });
    else await p.screenshot({ path: file });
    assert.ok(statSync(file).size > 1000, `${file} is a real image`);
    written.push(file);
    await axe(p, `${locale} ${name}`);
  }

  before(async () => {
    // Not signed in: the window signs it in. Prompts go to the window; the capture page is the media provider.
    stack = await signedOutSetup('aios-screens-', 'rt_screens', {
      identity: { device_name: 'Front desk PC' },
      confirmations: { provider: 'ui', timeout_ms: 120_000 },
      handlers: { diagnostics: { enabled: true }, media: { backend: 'provider' } },
    }, { problems, viewport: VIEWPORT });
    ({ dir, bridgeUrl, ui, localToken, context, page } = stack);
  });

  after(async () => {
    await stack?.stop();
  });

  for (const locale of ['en', 'zh-CN', 'pseudo']) {
    test(`${locale}: every screen`, async () => {
      const query = `?lang=${locale}`;
      await page.goto(`${ui}/ui/${query}#token=${encodeURIComponent(localToken)}`);
      await page.locator('#agent-state[data-state="connected"]').waitFor();

      // Sign-in: the code and the QR code.
      await page.locator('#signin[data-state="not_signed_in"]').waitFor();
      await page.locator('#signin-start').click();
      await page.locator('#signin[data-state="waiting"]').waitFor();
      await page.locator('#signin-qr[src^="data:image/png"]').waitFor();
      await page.locator('#signin-expires:not(:empty)').waitFor();
      await screen(page, locale, 'signin', page.locator('#signin'));

      // Approved on the bridge's page: signed in, connected, idle.
      const view = await rpc<{ verification_uri_complete: string; bridge_url: string }>('control.signin.status');
      await decideSignIn(context, view.verification_uri_complete, 'approve');
      await page.locator('#signin-who').waitFor({ timeout: slow(60_000) });
      await page.locator('#bridge-state[data-state="connected"]').waitFor({ timeout: slow(60_000) });
      await page.locator('#pause:not([disabled])').waitFor();
      const signedIn = await rpc<{ user_id: string; workspace_id: string; bridge_url: string }>('control.signin.status');
      params.push(signedIn.user_id, signedIn.workspace_id, signedIn.bridge_url, 'Front desk PC', 'Helpdesk assistant', `Reports-${locale}`, `reports-${locale}`, dir);

      // A high-risk call waits for the user: the Confirmations screen comes to the front.
      const login = JSON.parse(readFileSync(join(data(), 'login.json'), 'utf8')) as { device_id: string };
      const rt = new RuntimeClient({ bridge_url: bridgeUrl, token: 'rt_screens', workspace_id: 'ws_b', device_id: login.device_id });
      await until(async () => (await rt.device(login.device_id).catch(() => ({ online: false })))['online'] === true, 30_000, 'the agent online at the bridge');
      const call = rt.call('diagnostics.confirm', {}, { wait: true, confirm_timeout_ms: 120_000, requester: { kind: 'agent', id: 'agt_helpdesk', name: 'Helpdesk assistant' } });
      const prompt = page.getByRole('alertdialog');
      await prompt.waitFor();
      await page.locator('#nav button[data-screen="prompt"][aria-current="page"]').waitFor();
      await page.locator('#prompt-countdown:not(:empty)').waitFor();
      await screen(page, locale, 'prompt');
      await page.locator('#prompt button[data-answer="allow_once"]').click();
      const { record } = await call;
      assert.equal(record.outcome?.state, 'completed', JSON.stringify(record.outcome?.error));

      // Answered: back on Home, which lists the call in words.
      await page.locator('#screen-home:not([hidden])').waitFor();
      await page.locator(`#home-calls li[data-call-id="${record.call_id}"]`).waitFor();
      await screen(page, locale, 'home');

      // Activity and one call's details.
      await openScreen(page, 'activity');
      const row = page.locator(`#activity li[data-call-id="${record.call_id}"]`);
      await row.waitFor();
      await row.locator('time:not(:empty)').waitFor();
      await screen(page, locale, 'activity');
      await row.locator('button').click();
      await page.locator('#activity-details:not([hidden])').waitFor();
      await page.locator('#ad-call-id', { hasText: record.call_id }).waitFor();
      await screen(page, locale, 'details', page.locator('#activity-details'));
      await page.locator('#activity-details-close').click();

      // Shares & devices: a shared folder with a name, a device with a name.
      await openScreen(page, 'shares');
      const folder = join(dir, `Reports-${locale}`);
      mkdirSync(folder, { recursive: true });
      const shared = await page.locator('#grants li[data-kind="files"]').count();
      await page.locator('#share-path').fill(folder);
      await page.locator('#share-alias').fill(`reports-${locale}`);
      await page.locator('#share-access').selectOption('read');
      await page.locator('#share-form button[type="submit"]').click();
      await until(async () => (await page.locator('#grants li[data-kind="files"]').count()) > shared, 30_000, 'the folder listed');
      if (await page.locator('#device-form').isVisible()) {
        const kinds = await page.locator('#device-kind option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
        const kind = kinds.includes('serial') ? 'serial' : kinds[0];
        if (kind && (await page.locator(`#grants li[data-kind="${kind}"]`).count()) === 0) {
          await page.locator('#device-kind').selectOption(kind);
          await page.locator('#device-id').fill(kind === 'serial' ? '/dev/ttyUSB0' : 'device-1');
          await page.locator('#device-alias').fill('scale');
          await page.locator('#device-form button[type="submit"]').click();
          await page.locator(`#grants li[data-kind="${kind}"]`).waitFor();
        }
      }
      await screen(page, locale, 'shares');

      // Functions: grouped by handler, one turned off.
      await openScreen(page, 'functions');
      const echo = page.locator('#functions li[data-function-id="diagnostics.echo"] input[type="checkbox"]');
      await echo.waitFor();
      if (await echo.isChecked()) await echo.click();
      await until(async () => !(await echo.isChecked()), 30_000, 'diagnostics.echo off');
      await screen(page, locale, 'functions');

      // General and About.
      await openScreen(page, 'general');
      await page.locator('#log-level option').first().waitFor({ state: 'attached' });
      await screen(page, locale, 'general');
      await openScreen(page, 'about');
      await page.locator('#about-version:not(:empty)').waitFor();
      await screen(page, locale, 'about');

      // The capture page (the media provider the tray runs hidden), in the same language.
      const capture = await context.newPage();
      try {
        capture.on('pageerror', (e) => problems.push(`capture page error: ${e.message}`));
        await capture.goto(`${ui}/ui/capture.html${query}#token=${encodeURIComponent(localToken)}`);
        await capture.locator('#provider-state[data-state="attached"]').waitFor();
        await screen(capture, locale, 'capture');
      } finally {
        await capture.close();
      }

      // Signed out again for the next language's sign-in screen (Home again, as a fresh window opens).
      await openScreen(page, 'home');
      await page.locator('#signout').click();
      await page.locator('#signin[data-state="not_signed_in"]').waitFor({ timeout: slow(60_000) });
      assert.deepEqual(problems, []);
    });
  }

  test('both languages have every screen', () => {
    for (const locale of ['en', 'zh-CN']) for (const name of SCREEN_NAMES) assert.ok(written.includes(join(SCREENS, locale, `${name}.png`)), `${locale}/${name}.png written`);
  });
});
