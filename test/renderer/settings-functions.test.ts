/**
 * The Settings screen's functions, general and About parts in Debian's Chromium against a real bridge and
 * agent: turning a function off in the page makes the runtime's call answer `unknown_function` and the
 * bridge drop it from the device's functions and card, on again it works, with no restart; a function the
 * admin config turned off cannot be turned on; the log level changes the running agent's; About shows
 * the version, protocol and data folder; all of it by keyboard alone; axe-core finds nothing serious.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { CLIENT_PROTOCOL_VERSION } from '../../src/protocol/messages.js';
import { APP_VERSION } from '../../src/version.js';
import { callLocal } from '../../src/endpoint/local-client.js';
import { ids, ROOT, tempDir, until } from '../helpers/stack.js';
import { setup } from './stack.js';
import { openScreen, seriousViolations } from './page-checks.js';

/** Presses Tab until `selector` has the focus (at most `max` times): keyboard-only navigation. */
async function tabTo(page: Page, selector: string, max = 200): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate(`document.activeElement?.matches(${JSON.stringify(selector)}) ?? false`)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${selector}`);
}

test('functions off and on from Settings by keyboard: unknown_function, unpublished, back; the admin ceiling; log level; About', async () => {
  const s = await setup({ agent: { functions: { disabled: ['diagnostics.wait'] } } });
  try {
    const echo = () => s.client.call('diagnostics.echo', { value: 1 }, { wait: true });
    const device = () => s.client.device(ids.device_id);
    const published = async () => ((await device())['functions'] as { id: string }[]).some((f) => f.id === 'diagnostics.echo');
    const inCard = async () => ((await device())['adapter_card'] as { skills: { id: string }[] }).skills.some((k) => k.id === 'diagnostics.echo');
    assert.equal((await echo()).record.outcome?.state, 'completed');

    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await openScreen(s.page, 'functions');
    const row = s.page.locator('#functions li[data-function-id="diagnostics.echo"]');
    await row.waitFor();
    // Grouped by handler, under the handler's name; the id as code.
    assert.equal(await s.page.locator('#functions section[data-group="diagnostics"] h3').textContent(), 'Diagnostics');
    assert.equal(await s.page.locator('#functions section[data-group="diagnostics"] li[data-function-id="diagnostics.echo"] code').textContent(), 'diagnostics.echo');
    const box = row.getByRole('checkbox');
    assert.equal(await box.isChecked(), true);
    assert.equal(await row.locator('label > span').first().textContent(), 'Echo (diagnostics.echo) · permission level: public · only reads');
    assert.equal(await row.locator('.function-description').textContent(), 'Sends back what it was given, to check that calls reach this device.');

    // The admin's switch: shown, and its checkbox cannot be used.
    const adminRow = s.page.locator('#functions li[data-function-id="diagnostics.wait"]');
    assert.match((await adminRow.locator('label > span').first().textContent()) ?? '', /turned off by your administrator$/);
    assert.equal(await adminRow.getByRole('checkbox').isDisabled(), true);
    assert.equal(await adminRow.getByRole('checkbox').isChecked(), false);

    // Off, by keyboard: Tab to the checkbox, Space.
    await tabTo(s.page, '#functions li[data-function-id="diagnostics.echo"] input');
    await s.page.keyboard.press('Space');
    await until(() => s.running.functions.isDisabled('diagnostics.echo'), 10_000, 'the agent turned it off');
    assert.equal(await box.isChecked(), false);
    await until(async () => !(await published()) && !(await inCard()), 10_000, 'the bridge and the card drop it');
    await until(() => s.running.agent.session?.isConnected, 10_000, 'the new hello went through');
    const refused = await echo();
    assert.equal(refused.record.outcome?.error?.type, 'unknown_function', JSON.stringify(refused.record.outcome));

    // On again, no restart.
    await s.page.keyboard.press('Space');
    await until(async () => (await published()) && (await inCard()), 10_000, 'published again');
    await until(() => s.running.agent.session?.isConnected, 10_000, 'connected');
    assert.equal((await echo()).record.outcome?.state, 'completed');

    // Search: by words of the title or description, or the id; a miss says so.
    await s.page.getByLabel('Search functions').fill('echo');
    assert.deepEqual(await s.page.locator('#functions li').evaluateAll((lis) => lis.map((li) => (li as unknown as { dataset: { functionId: string } }).dataset.functionId)), ['diagnostics.echo']);
    await s.page.getByLabel('Search functions').fill('no such function anywhere');
    await s.page.getByText('No function matches the search.', { exact: true }).waitFor();
    assert.equal(await s.page.locator('#functions li').count(), 0);
    await s.page.getByLabel('Search functions').fill('');
    await row.waitFor();

    // Log level: chosen by keyboard (the quietest, so the test logger stays quiet), the agent's logger follows.
    await openScreen(s.page, 'general');
    await tabTo(s.page, '#log-level');
    await s.page.keyboard.press('End');
    await until(async () => ((await callLocal(s.endpoint, 'control.settings.get', {})) as { log_level: string }).log_level === 'fatal', 10_000, 'the running logger at fatal');
    assert.equal((JSON.parse(readFileSync(join(s.dir, 'agent', 'user-settings.json'), 'utf8')) as { log_level?: string }).log_level, 'fatal', 'kept for the next start');

    // About.
    assert.equal(await s.page.locator('#about-version').textContent(), APP_VERSION);
    assert.equal(await s.page.locator('#about-protocol').textContent(), `1.2 (this client offers ${CLIENT_PROTOCOL_VERSION})`, 'the negotiated version, and the offered one');
    assert.equal(await s.page.locator('#about-data-dir').textContent(), join(s.dir, 'agent'));
    // In a browser there is no folder picker, start-at-login or open-logs (the Electron shell's).
    for (const id of ['share-pick', 'login-item-row', 'open-logs']) assert.equal(await s.page.locator(`#${id}`).isHidden(), true, id);

    assert.deepEqual(await seriousViolations(s.page), []);
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});

test('a new local adapter folder shows on the Functions screen as waiting for approval, in English and Chinese, and goes once approved', async () => {
  const example = join(ROOT, 'examples/hello-adapter/org.example.hello');
  for (const [locale, words, home] of [
    ['en-US', 'New adapter waiting for your approval: org.example.hello', 'New adapters waiting for your approval: 1'],
    ['zh-CN', '新的适配器等待您批准：org.example.hello', '等待您批准的新适配器：1 个'],
  ] as const) {
    const dir = tempDir('aios-renderer-adapters-');
    const adapters = join(dir, 'adapters');
    cpSync(example, join(adapters, 'org.example.hello'), { recursive: true });
    const s = await setup({ locale, agent: { adapters: { dirs: [adapters] }, trust: { keys: [join(ROOT, 'examples/hello-adapter/keys/EXAMPLE-ONLY.jwks')] } } });
    try {
      await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
      // Home says something waits, with the way to it.
      await s.page.locator('#home-adapters-line:not([hidden])').waitFor();
      assert.equal(await s.page.locator('#home-adapters').textContent(), home);
      await s.page.locator('#home-open-functions').click();
      await s.page.locator('#screen-functions:not([hidden])').waitFor();
      const line = s.page.locator('#adapters-waiting li[data-adapter="org.example.hello"][data-state="waiting"]');
      await line.waitFor();
      assert.match((await line.textContent()) ?? '', new RegExp(words.replace(/[.]/g, '\\.')));
      assert.equal(await s.page.locator('#functions li[data-function-id="hello.greet"]').count(), 0, 'its functions are not offered while it waits');
      if (locale === 'en-US') {
        assert.deepEqual(await seriousViolations(s.page), []);
        // Approved through the running agent (as `aios-device adapters approve` does): the line goes on the next refresh.
        await callLocal({ http: s.endpoint.http, token: s.endpoint.token }, 'aios/registry.approve', { adapter_id: 'org.example.hello' });
        await until(async () => ((await callLocal({ http: s.endpoint.http, token: s.endpoint.token }, 'control.functions.list', {})) as { functions: { id: string }[] }).functions.some((f) => f.id === 'hello.greet'), 30_000, 'hello.greet offered');
        await s.page.reload();
        await openScreen(s.page, 'functions');
        await s.page.locator('#functions li[data-function-id="hello.greet"]').waitFor();
        assert.equal(await s.page.locator('#adapters-box').isHidden(), true, 'nothing waits any more');
      }
    } finally {
      await s.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
