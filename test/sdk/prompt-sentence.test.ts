/**
 * describe() keys in the real agent: a files.write_text call put to an attached answerer shows the
 * sentence rendered from handlers/files/i18n in the agent's language, and the activity list carries the
 * same sentence for that call (kept in memory; the audit row stores no sentence).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createControlMethods } from '../../src/consent/control-api.js';
import { CONTROL_EVENTS } from '../../src/consent/control-events.js';
import type { PromptView } from '../../src/consent/prompt.js';
import { ids, inProcessStack, until } from '../helpers/stack.js';

for (const [locale, sentence] of [
  ['en', 'Replace report.txt in Documents (2 KB now, 5 bytes after)'],
  ['zh-CN', '替换 “Documents”中的 report.txt（当前 2 KB，写入后 5 字节）'],
] as const) {
  test(`the prompt and the activity list show the files sentence in ${locale}`, async () => {
    const s = await inProcessStack({ connect: false, agentOptions: { locale } });
    try {
      const docs = join(s.dir, 'Documents');
      mkdirSync(docs);
      writeFileSync(join(docs, 'report.txt'), Buffer.alloc(2000));
      const { running } = s;
      running.grants.add('files', { path: docs, name: 'Documents', access: 'read_write' });
      const api = createControlMethods(running.consent, running.grants);
      const ctx = { authenticated: true };
      await api['control.prompts.attach']!({ name: 'test page' }, ctx);
      const prompted = new Promise<PromptView>((r) => running.consent.events.once(CONTROL_EVENTS.prompt, r));
      const call_id = randomUUID();
      const outcome = running.agent.dispatcher.invoke({
        call_id, function: 'files.write_text', arguments: { root: 'Documents', path: 'report.txt', text: 'hello', mode: 'overwrite' },
        workspace_id: ids.workspace_id, user_id: ids.user_id, device_id: ids.device_id,
      });
      // An outcome before any prompt fails the test at once (instead of waiting for a prompt that never comes).
      const view = await Promise.race([prompted, outcome.then((o) => assert.fail(`ended without a prompt: ${JSON.stringify(o)}`))]);
      assert.equal(view.sentence, sentence);
      await api['control.prompts.answer']!({ prompt_id: view.prompt_id, answer: 'allow_once' }, ctx);
      assert.equal((await outcome).state, 'completed');
      // The audit row is written just after the outcome (off the call path).
      const row = await until(async () => {
        const { calls } = (await api['control.activity.list']!({ limit: 5 }, ctx)) as { calls: { call_id: string; sentence?: string }[] };
        return calls.find((c) => c.call_id === call_id);
      }, 10_000, 'the call in the activity list');
      assert.equal(row?.sentence, sentence);
      assert.ok(!JSON.stringify(running.consent.audit.list({ limit: 5 })).includes('Overwrite'), 'the audit rows hold no sentence');
    } finally {
      await s.stop();
    }
  });
}
