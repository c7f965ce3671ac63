/**
 * Issue 31 §1: the terminal prompt says the call in the user's locale from the keys the prompt view
 * carries (the function's title, the describe() sentence), not in the agent's; a third-party adapter's
 * plain sentence is shown as written, marked as its own words.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { TtyPromptProvider } from '../../src/consent/providers/tty.js';
import { promptWords } from '../../src/consent/describe-risk.js';
import { strings } from '../../src/i18n/index.js';
import { catalogueDirs, loadHandlerCatalogue } from '../../src/sdk/instance.js';
import type { PromptView } from '../../src/consent/prompt.js';

loadHandlerCatalogue('files', catalogueDirs('files'));

const view = (extra: Partial<PromptView>): PromptView => ({
  prompt_id: 'p1', call_id: 'c1', function_id: 'files.write_text', function_name: 'Write a text file',
  sentence: 'Create note.txt in Demo (6 bytes)', requester: { kind: 'user', name: 'IT admin' }, runtime: { id: 'rt', name: 'Front desk' },
  workspace_id: 'ws', user_id: 'u', permission_level: 'high', risk: { destructive: false, read_only: false, idempotent: false, physical: false },
  resource: '*', resources: [], remember_any: false, rememberable: true, created_at: new Date().toISOString(), expires_at: new Date(Date.now() + 60_000).toISOString(),
  ...extra,
});

const keyed = {
  title_key: 'files.function.files.write_text.title',
  sentence_message: { key: 'files.write.create', params: { target: { key: 'files.where.path', params: { path: 'note.txt', root: 'Demo' } }, size: { key: 'files.size.bytes', params: { n: 6 } } } },
};

test('the tty prompt renders the title and sentence keys in its locale, whatever the agent rendered', async () => {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString('utf8')));
  const ac = new AbortController();
  const shown = new TtyPromptProvider(new PassThrough(), out, 'zh-CN').show(view(keyed), {}, ac.signal);
  ac.abort('timeout');
  await shown;
  assert.match(text, /\n {4}写入文本文件\n/);
  assert.match(text, /\n {4}创建 “Demo”中的 note\.txt（6 字节）\n/);
  assert.doesNotMatch(text, /Write a text file|Create note\.txt/);
});

test('promptWords: keys in the reader language; an adapter plain sentence as written, marked as its own words', () => {
  assert.deepEqual(promptWords(view(keyed), 'en'), { title: 'Write a text file', sentence: 'Create note.txt in Demo (6 bytes)' });
  assert.equal(promptWords(view(keyed), 'zh-CN').title, strings.render({ key: keyed.title_key }, 'zh-CN'));
  const own = view({ function_id: 'acme.ping', function_name: 'Ping the ACME box', sentence: 'Ping box 7', sentence_own_words: true });
  assert.deepEqual(promptWords(own, 'zh-CN'), { title: 'Ping the ACME box', sentence: '“Ping box 7”（适配器的原话）' });
  assert.deepEqual(promptWords(own, 'en'), { title: 'Ping the ACME box', sentence: '“Ping box 7” (in the adapter’s own words)' });
});
