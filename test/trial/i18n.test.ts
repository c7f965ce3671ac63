/**
 * Issue #30, a report in the tester's language: every check's title, message and evidence label, and the
 * verdict words, come from the en and zh-CN catalogues. The zh-CN report of real runs (with and without
 * control of the device) holds no Latin phrase of three words or more outside what came from elsewhere
 * (the messages' parameters: a device's own error message, a path, an id; evidence requests and answers).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { inProcessStack, ids } from '../helpers/stack.js';
import { placeholders, strings } from '../../src/i18n/index.js';
import { trialEn, trialZh } from '../../src/i18n/trial.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { renderHtml } from '../../src/trial/report.js';
import type { TrialReport } from '../../src/trial/types.js';
import { slow } from '../helpers/wait.js';

/** Runs of three or more Latin words (a word: letters only, not part of an id, flag, path or file name). */
function latinPhrases(text: string): string[] {
  return [...text.matchAll(/(?<![\w./<>{}-])[A-Za-z]+(?:[ \t]+[A-Za-z]+){2,}(?![\w/<>{}-]|\.\w)/g)].map((x) => x[0]);
}

test('latinPhrases finds English sentences, not ids, flags or the product name', () => {
  assert.deepEqual(latinPhrases('设备离线：请在设备上启动代理'), []);
  assert.deepEqual(latinPhrases('请加上 --allow-effects --control local 运行；AIOS Device 试运行；HTTP 409 device_offline'), []);
  assert.deepEqual(latinPhrases('需要 grants.printers 或 control.session.offline'), []);
  assert.deepEqual(latinPhrases('设备 the device is offline'), ['the device is offline']);
});

test('every zh-CN trial string is Chinese around its placeholders, with the same placeholders as en', () => {
  for (const [k, en] of Object.entries(trialEn)) {
    const zh = trialZh[k as keyof typeof trialEn];
    assert.deepEqual(placeholders(zh), placeholders(en), k);
    assert.deepEqual(latinPhrases(zh.replace(/\{[A-Za-z_]+\}/g, ' ')), [], `${k}: ${zh}`);
  }
});

/** The page's visible text, without what is data: evidence (pre), ids (code), styles, and each message's parameters. */
function templateText(html: string, r: TrialReport): string {
  let text = html
    .replace(/<style>[\s\S]*?<\/style>/g, ' ')
    .replace(/<pre>[\s\S]*?<\/pre>/g, ' ')
    .replace(/<code>[\s\S]*?<\/code>/g, ' ')
    .replace(/<title>[\s\S]*?<\/title>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
  const values = r.checks.flatMap((c) => Object.values(c.message_params ?? {})).filter((v) => v.length > 0);
  // Longest first, so a value inside another is not cut out of it first.
  for (const v of values.sort((a, b) => b.length - a.length)) text = text.split(v).join(' § ');
  for (const v of [r.bridge, ...r.devices, r.environment.platform, r.environment.arch, r.environment.node]) text = text.split(v).join(' § ');
  return text;
}

test('the zh-CN report of real runs: every message from the catalogue, no English phrase outside parameters', { timeout: slow(300_000) }, async () => {
  const s = await inProcessStack({});
  try {
    const base = { bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], lang: 'zh-CN' as const };
    const controlled = await runTrial({ ...base, control: 'local', agentDataDir: join(s.dir, 'agent'), unattended: true, allowEffects: true, expectWorkspace: ids.workspace_id });
    const plain = await runTrial({ ...base, only: ['identity', 'contract.files.read_text', 'contract.device', 'permissions', 'faults', 'confirm', 'extra'] });
    for (const r of [controlled, plain]) {
      assert.equal(r.lang, 'zh-CN');
      for (const c of r.checks) {
        assert.ok(strings.has(c.message_key), `${c.id}: ${c.message_key} is a catalogue key`);
        assert.match(c.title, /[\u4e00-\u9fff]/, `${c.id}'s title speaks Chinese: ${c.title}`);
      }
      const html = renderHtml(r);
      assert.deepEqual(latinPhrases(templateText(html, r)), [], 'English phrases in the zh-CN report');
    }
    // The scan sees the page's words: the same report's page in English has English phrases.
    assert.ok(latinPhrases(templateText(renderHtml({ ...plain, lang: 'en' }), plain)).length > 5, 'the scan reads the page');
    // Both kinds of run were exercised: what ran, what could not, and what the trial stood in for.
    const verdicts = new Set([...controlled.checks, ...plain.checks].map((c) => c.verdict));
    for (const v of ['pass', 'not_run', 'simulated', 'inconclusive'] as const) assert.ok(verdicts.has(v), `a ${v} check was rendered`);
  } finally {
    await s.stop();
  }
});
