/**
 * The bridge console (`/console/`) in Debian's Chromium against a CLI-started bridge and agent: sign in
 * with a runtime token, open the device, run device.info from its generated form and watch it complete;
 * a wrong token is refused; the page passes axe-core with no serious or critical violation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { processStack, ids } from '../helpers/stack.js';
import { CHROMIUM_ARGS } from '../login/login-process.js';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

test('the console runs device.info from its form and shows the live state and the output', { timeout: 300_000 }, async () => {
  const s = await processStack();
  const profile = mkdtempSync(join(tmpdir(), 'aios-console-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
  try {
    const page = await context.newPage();
    const res = await page.goto(`${s.url}/console/`);
    assert.match(res!.headers()['content-security-policy'] ?? '', /script-src 'self'/);

    await page.fill('#token', 'not-a-token');
    await page.click('#signin-btn');
    await page.waitForSelector('#signin-error:not(:empty)');
    assert.match(await page.textContent('#signin-error') ?? '', /not a valid runtime token/);

    await page.fill('#token', s.tokens.runtime);
    await page.press('#token', 'Enter');
    const row = page.locator(`tr[data-device="${ids.device_id}"]`);
    await row.waitFor();
    assert.match(await row.textContent() ?? '', /online/);
    await row.focus();
    await page.keyboard.press('Enter'); // keyboard only
    await page.waitForSelector('#device:not([hidden])');
    assert.match(await page.textContent('#device-facts') ?? '', /client version/);

    await page.selectOption('#fn', 'diagnostics.echo');
    await page.fill('#arg-value', '"from the console"');
    assert.deepEqual(JSON.parse(await page.inputValue('#args-json')), { value: 'from the console' }, 'the form fills the JSON');
    await page.click('#run');
    await page.locator('#call-state', { hasText: 'completed' }).waitFor({ timeout: 60_000 });
    const outcome = JSON.parse(await page.textContent('#call-outcome') ?? '{}') as { state: string; output: unknown };
    assert.equal(outcome.state, 'completed');
    assert.deepEqual(outcome.output, { value: 'from the console' });
    // The states as the stream sent them: on protocol 1.1 a fast call streams no intermediate state
    // (its accepted/running are derived from the outcome and never streamed), a slow one shows them too.
    assert.match(await page.textContent('#call-events') ?? '', /submitted at .*completed at/s, 'live states were shown in order');

    await page.selectOption('#fn', 'device.info');
    await page.click('#run');
    await page.locator('#call-outcome', { hasText: '"function": "device.info"' }).waitFor({ timeout: 60_000 });
    assert.match(await page.textContent('#call-outcome') ?? '', /"output"/);

    await page.evaluate(AXE); // through the debugger protocol, so the page's CSP need not be loosened
    const violations = (await page.evaluate('axe.run().then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact })))')) as { id: string; impact: string }[];
    const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    assert.deepEqual(bad.map((v) => v.id), []);
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
    await s.stop();
  }
});
