/**
 * The page in two languages and a pseudo-locale, against a real bridge and agent in Debian's Chromium:
 * the catalogues agree with each other and with the page; the browser's language picks the locale and
 * the switch changes it; in `?lang=pseudo` every visible text that is not agent data is a catalogue
 * string; each screen is screenshotted (test-artifacts/screens/) and passes axe-core (no serious or
 * critical violation).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalogue, placeholders, readCatalogueDir } from '../../src/i18n/catalogue.js';
import { setup } from './stack.js';
import { axe, openScreen, shot, unwrappedText } from './page-checks.js';

const ROOT = join(import.meta.dirname, '..', '..');
const RENDERER = join(ROOT, 'electron', 'renderer');

test('the page catalogues: same keys and placeholders in en and zh-CN, every key the page uses exists', () => {
  const tables = readCatalogueDir(RENDERER);
  const en = tables.en!;
  const zh = tables['zh-CN']!;
  assert.ok(en && zh, 'both catalogues exist');
  const cat = new Catalogue();
  cat.add('ui', 'en', en);
  cat.add('ui', 'zh-CN', zh);
  assert.deepEqual(Object.keys(zh).sort(), Object.keys(en).sort());
  for (const k of Object.keys(en)) assert.deepEqual(placeholders(zh[k]!), placeholders(en[k]!), `placeholders of ${k}`);
  const html = readFileSync(join(RENDERER, 'index.html'), 'utf8');
  // The tray page's modules (capture.ts is the capture page's, checked in screens.test.ts).
  const js = readdirSync(RENDERER)
    .filter((f) => f.endsWith('.ts') && f !== 'capture.ts')
    .map((f) => readFileSync(join(RENDERER, f), 'utf8'))
    .join('\n');
  const used = [...html.matchAll(/data-i18n="([^"]+)"/g), ...js.matchAll(/\bt\('(ui\.[^'`$]+)'/g)].map((m) => m[1]!);
  assert.ok(used.length > 30, `the page uses its catalogue (${used.length} uses)`);
  for (const k of used) assert.ok(cat.has(k), `${k} is in the catalogue`);
});

test('pseudo-locale: every visible text outside agent data comes from the catalogue', async () => {
  const s = await setup();
  try {
    await s.page.goto(`${s.ui.base}/ui/?lang=pseudo#token=${encodeURIComponent(s.endpoint.token)}`);
    await s.page.locator('#agent-state[data-state="connected"]').waitFor();
    await s.page.locator('#pause:not([disabled])').waitFor();
    await s.page.locator('#bridge-state[data-state="connected"]').waitFor();
    assert.deepEqual(await unwrappedText(s.page), [], 'idle screen');

    const call = s.client.call('diagnostics.confirm', {}, { wait: true, confirm_timeout_ms: 60_000 });
    await s.page.getByRole('alertdialog').waitFor();
    await s.page.locator('#prompt-args-toggle').click();
    await s.page.locator('#prompt-args:not([hidden])').waitFor();
    assert.deepEqual(await unwrappedText(s.page), [], 'prompt screen');
    await s.page.getByRole('button', { name: '⟦Deny⟧', exact: true }).click();
    const { record } = await call;
    await openScreen(s.page, 'activity');
    await s.page.locator(`#activity li[data-call-id="${record.call_id}"][data-state="rejected"]`).waitFor();
    await s.page.getByRole('button', { name: '⟦Pause⟧', exact: true }).click();
    await s.page.getByRole('button', { name: '⟦Resume⟧', exact: true }).waitFor();
    assert.deepEqual(await unwrappedText(s.page), [], 'activity and paused');
    for (const screen of ['home', 'prompt', 'shares', 'functions', 'general', 'about'] as const) {
      await openScreen(s.page, screen);
      assert.deepEqual(await unwrappedText(s.page), [], screen);
    }

    // The check can fail: a text that did not come from the catalogue is reported.
    await s.page.evaluate("document.querySelector('main').append(Object.assign(document.createElement('p'), { textContent: 'Hard-coded' }))");
    assert.deepEqual(await unwrappedText(s.page), ['Hard-coded']);
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});

const LOCALES = [
  { browser: 'en-US', locale: 'en', title: 'AIOS Device', pause: 'Pause', deny: 'Deny', none: 'Nothing is waiting for you.', seconds: /^\d+ sec$/, rejected: 'rejected' },
  { browser: 'zh-CN', locale: 'zh-CN', title: 'AIOS 设备', pause: '暂停', deny: '拒绝', none: '没有等待您处理的事项。', seconds: /^\d+秒$/, rejected: '已拒绝' },
];

for (const L of LOCALES) {
  test(`${L.locale}: the browser's language picks the catalogue; every screen screenshotted and passes axe-core`, async () => {
    const s = await setup({ locale: L.browser });
    try {
      await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
      await s.page.locator('#pause:not([disabled])').waitFor();
      await s.page.locator('#bridge-state[data-state="connected"]').waitFor();
      assert.equal(await s.page.locator('html').getAttribute('lang'), L.locale);
      assert.equal(await s.page.locator('h1').textContent(), L.title);
      assert.equal(await s.page.title(), L.title);
      assert.equal(await s.page.locator('#lang').inputValue(), L.locale);
      await s.page.getByText(L.none, { exact: true }).waitFor();
      await shot(s.page, `${L.locale}-main`);
      await axe(s.page, `${L.locale} main`);

      const call = s.client.call('diagnostics.confirm', {}, { wait: true, confirm_timeout_ms: 60_000 });
      const prompt = s.page.getByRole('alertdialog');
      await prompt.waitFor();
      assert.match((await s.page.locator('#prompt-countdown').textContent()) ?? '', L.seconds);
      await shot(s.page, `${L.locale}-prompt`);
      await axe(s.page, `${L.locale} prompt`);
      await prompt.getByRole('button', { name: L.deny, exact: true }).click();
      const { record } = await call;
      await openScreen(s.page, 'activity');
      const row = s.page.locator(`#activity li[data-call-id="${record.call_id}"]`);
      await row.waitFor();
      assert.ok(((await row.textContent()) ?? '').includes(L.rejected), 'the call state in the page language');
      const time = row.locator('time');
      assert.equal(
        await time.textContent(),
        new Intl.DateTimeFormat(L.locale, { dateStyle: 'short', timeStyle: 'medium' }).format(new Date((await time.getAttribute('datetime'))!)),
        'the time in the page language',
      );
      await shot(s.page, `${L.locale}-activity`);
      await axe(s.page, `${L.locale} activity`);
      assert.deepEqual(s.problems, []);
    } finally {
      await s.stop();
    }
  });
}

test('the language switch changes every string at once and is remembered', async () => {
  const s = await setup({ locale: 'en-US' });
  try {
    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await s.page.locator('#pause:not([disabled])').waitFor();
    await openScreen(s.page, 'general');
    await s.page.getByRole('combobox', { name: 'Language' }).selectOption('zh-CN');
    await s.page.getByRole('button', { name: '暂停', exact: true }).waitFor();
    assert.equal(await s.page.locator('html').getAttribute('lang'), 'zh-CN');
    assert.equal(await s.page.locator('#agent-state').textContent(), '代理：已连接');
    await s.page.reload();
    await s.page.locator('#pause:not([disabled])').waitFor();
    assert.equal(await s.page.locator('h1').textContent(), 'AIOS 设备');
    await s.page.getByRole('button', { name: '常规', exact: true }).click();
    await s.page.getByRole('combobox', { name: '语言' }).selectOption('en');
    await s.page.getByRole('heading', { name: 'General', exact: true }).waitFor();
    await s.page.getByRole('button', { name: 'Home', exact: true }).click();
    await s.page.getByText('Nothing is waiting for you.', { exact: true }).waitFor();
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});
