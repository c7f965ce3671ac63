/**
 * The Settings screen's functions, general and About parts in Debian's Chromium against a real bridge and
 * agent: turning a function off in the page makes the runtime's call answer `unknown_function` and the
 * bridge drop it from the device's functions and card, on again it works, with no restart; a function the
 * admin config turned off cannot be turned on; the log level changes the running agent's; About shows
 * the version, protocol and data folder; all of it by keyboard alone; axe-core finds nothing serious.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { CLIENT_PROTOCOL_VERSION } from '../../src/protocol/messages.js';
import { APP_VERSION } from '../../src/version.js';
import { callLocal } from '../../src/endpoint/local-client.js';
import { ids, until } from '../helpers/stack.js';
import { setup } from './stack.js';
import { seriousViolations } from './page-checks.js';

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
    const row = s.page.locator('#functions li[data-function-id="diagnostics.echo"]');
    await row.waitFor();
    const box = row.getByRole('checkbox');
    assert.equal(await box.isChecked(), true);
    assert.match((await row.textContent()) ?? '', /^Echo \(diagnostics\.echo\) · public permission$/);

    // The admin's switch: shown, and its checkbox cannot be used.
    const adminRow = s.page.locator('#functions li[data-function-id="diagnostics.wait"]');
    assert.match((await adminRow.textContent()) ?? '', /turned off by your administrator$/);
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

    // Log level: chosen by keyboard (the quietest, so the test logger stays quiet), the agent's logger follows.
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

    assert.deepEqual(await seriousViolations(s.page, 'settings'), []);
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});
