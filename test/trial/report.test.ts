/**
 * Issue #30, a report for a manager: the HTML in the tester's language (en, zh-CN), with the ten-second
 * summary, the negotiated protocol, evidence with secrets redacted and print CSS for A4; screenshots in
 * test-artifacts/screens/<locale>/trial-report.png, axe-clean, in Debian's Chromium.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { cliRun, inProcessStack, ids } from '../helpers/stack.js';
import { placeholders } from '../../src/i18n/index.js';
import { trialEn, trialZh } from '../../src/i18n/trial.js';
import { CHROMIUM_ARGS } from '../login/login-process.js';
import { axe, shot } from '../renderer/page-checks.js';
import { redactEvidence, runTrial } from '../../src/trial/run-trial.js';
import { renderHtml } from '../../src/trial/report.js';
import { slow } from '../helpers/wait.js';

test('evidence is redacted: the runtime token, secret-named keys and key-looking strings', () => {
  const token = 'rt_0123456789abcdef0123';
  const out = JSON.stringify(redactEvidence({ label: 'x', request: { authorization: 'Bearer abc', path: 'a.txt' }, response: { value: `say ${token} twice`, key: 'sk_live_aaaaaaaaaaaaaaaaaaaa1', sha: 'Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg' } }, token));
  assert.ok(!out.includes(token) && !out.includes('Bearer abc') && !out.includes('Zm9vYmFyYmF6'), out);
  assert.match(out, /"path":"a.txt"/);
});

test('the report in en and zh-CN: summary, protocol, lines, print CSS; screenshots pass axe-core', { timeout: slow(300_000) }, async () => {
  const s = await inProcessStack({});
  const dir = mkdtempSync(join(tmpdir(), 'aios-trial-report-'));
  const context = await chromium.launchPersistentContext(join(dir, 'profile'), { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
  try {
    for (const lang of ['en', 'zh-CN'] as const) {
      const r = await runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['identity', 'contract.diagnostics', 'contract.device', 'faults.timeout', 'confirm', 'extra.duplicate'], control: 'local', agentDataDir: join(s.dir, 'agent'), unattended: true, expectWorkspace: ids.workspace_id, lang });
      assert.equal(r.lang, lang);
      const html = renderHtml(r);
      assert.ok(!html.includes(s.tokens.runtime), 'no runtime token in the report');
      assert.match(html, new RegExp(`<html lang="${lang}">`));
      assert.match(html, /@page\{size:A4/);
      assert.match(html, lang === 'en' ? /Protocol negotiated with the device: 1\.2/ : /与设备协商的协议版本：1\.2/);
      assert.match(html, lang === 'en' ? /Simulated \(the trial stood in/ : /模拟（由试运行代替了人/);
      assert.match(html, lang === 'en' ? /AIOS Device trial report/ : /AIOS Device 试运行报告/);
      const file = join(dir, `report-${lang}.html`);
      writeFileSync(file, html);
      const page = await context.newPage();
      await page.setViewportSize({ width: 1000, height: 800 });
      await page.goto(pathToFileURL(file).href);
      await axe(page, `trial report (${lang})`);
      await shot(page, `${lang}/trial-report`);
      await page.close();
    }
  } finally {
    await context.close();
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every trial report string has a Chinese text with the same placeholders; a bad --lang is a usage error', async () => {
  for (const [k, en] of Object.entries(trialEn)) {
    const zh = trialZh[k as keyof typeof trialEn];
    assert.ok(zh && zh !== en, `${k} has its own Chinese text`);
    assert.deepEqual(placeholders(zh), placeholders(en), k);
  }
  const r = await cliRun(['trial', '--bridge', 'http://127.0.0.1:9', '--runtime-token', 'x', '--workspace', 'w', '--device', 'd', '--lang', 'fr']);
  assert.equal(r.code, 64);
  assert.match(r.err, /--lang must be one of en, zh-CN, not "fr"/);
});
