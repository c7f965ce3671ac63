/**
 * Issue 31 §1: the window speaks its own language, whatever the agent's. The agent sends the prompt's
 * title and sentence as catalogue keys (besides the text it rendered in its own locale) and serves its
 * catalogues (control.catalogue.get); a zh-CN window on an agent started in English shows the prompt's
 * title, sentence and level in Chinese, and an English window on a Chinese agent shows them in English.
 * Chromium (playwright-core), a real agent and bridge.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup } from './stack.js';
import { openScreen } from './page-checks.js';

const CASES = [
  {
    agentEnv: 'en_US.UTF-8', window: 'zh-CN',
    agentSentence: 'Run a diagnostic no-op that needs your confirmation.',
    title: '需确认的空操作', sentence: '运行一个需要您确认的诊断空操作。', risk: /^权限级别：高/, functionRow: /^需确认的空操作（diagnostics\.confirm）· 权限级别：高/,
  },
  {
    agentEnv: 'zh_CN.UTF-8', window: 'en',
    agentSentence: '运行一个需要您确认的诊断空操作。',
    title: 'Confirmed no-op', sentence: 'Run a diagnostic no-op that needs your confirmation.', risk: /^permission level: high/, functionRow: /^Confirmed no-op \(diagnostics\.confirm\) · permission level: high/,
  },
] as const;

for (const c of CASES) {
  test(`a ${c.window} window on an agent started in ${c.agentEnv} shows the prompt in the window's language`, async () => {
    const saved = process.env['LC_ALL'];
    process.env['LC_ALL'] = c.agentEnv;
    const s = await setup({ locale: c.window === 'zh-CN' ? 'zh-CN' : 'en-US' }).finally(() => {
      if (saved === undefined) delete process.env['LC_ALL'];
      else process.env['LC_ALL'] = saved;
    });
    try {
      await s.page.goto(`${s.ui.base}/ui/?lang=${c.window}#token=${encodeURIComponent(s.endpoint.token)}`);
      await s.page.locator('#agent-state[data-state="connected"]').waitFor();
      await s.page.locator('#bridge-state[data-state="connected"]').waitFor();

      const call = s.client.call('diagnostics.confirm', {}, { wait: true, confirm_timeout_ms: 60_000 });
      const prompt = s.page.getByRole('alertdialog');
      await prompt.waitFor();
      // The agent rendered its sentence in its own language; the window shows the keys in its own.
      assert.equal(s.running.consent.queue.list()[0]?.view.sentence, c.agentSentence, "the agent's own text is in the agent's language");
      assert.equal(await s.page.locator('#prompt-name').textContent(), c.title);
      assert.equal(await s.page.locator('#prompt-sentence').textContent(), c.sentence);
      assert.match((await s.page.locator('#prompt-risk').textContent()) ?? '', c.risk);
      assert.equal(await prompt.getAttribute('aria-describedby'), 'prompt-sentence');

      await s.page.locator('#prompt [data-answer="deny"]').click();
      assert.equal((await call).record.outcome?.error?.type, 'user_rejected');

      // The Functions screen: the title and the level in the window's language.
      await openScreen(s.page, 'functions');
      const row = s.page.locator('#functions li[data-function-id="diagnostics.confirm"] label > span').first();
      await row.waitFor();
      assert.match((await row.textContent()) ?? '', c.functionRow);
      assert.deepEqual(s.problems, []);
    } finally {
      await s.stop();
    }
  });
}
