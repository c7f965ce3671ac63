/**
 * personErrorText: what the tray's dialogs and the command line show for an error, in the person's
 * locale. Real errors from the code that raises them: a config file that breaks its schema, a data
 * folder refused, and a plain Error.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { personErrorText } from '../../src/app/error-text.js';
import { loadAgentConfig } from '../../src/config/agent-config.js';
import { DataDirError } from '../../src/storage/private-dir.js';
import { AdapterProblem } from '../../src/discovery/adapter-problem.js';
import { errorText, saidOf } from '../../src/i18n/said.js';

test('a config file that breaks its schema is said with its violations in the person\'s language', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aios-errtext-'));
  try {
    const file = join(dir, 'agent.yaml');
    writeFileSync(file, 'data_dir: 5\nno_such_key: 1\n');
    let err: unknown;
    try {
      loadAgentConfig(file);
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof Error, 'the config is refused');
    const en = personErrorText(err, 'en');
    const zh = personErrorText(err, 'zh-CN');
    assert.match(en, /no_such_key/);
    assert.match(zh, /no_such_key/);
    assert.match(zh, /[\u4e00-\u9fff]/, `Chinese words in ${zh}`);
    assert.doesNotMatch(zh, /must be|is not|unknown key/i, `no English sentence left: ${zh}`);
    assert.notEqual(en, zh);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a catalogue error is rendered in the locale; any other error keeps its message', () => {
  const e = new DataDirError('core.data_dir.not_a_folder', { dir: '/x' });
  assert.equal(personErrorText(e, 'en'), e.message);
  assert.notEqual(personErrorText(e, 'zh-CN'), e.message);
  assert.match(personErrorText(e, 'zh-CN'), /\/x/);
  assert.equal(personErrorText(new Error('plain words'), 'zh-CN'), 'plain words');
});

test('an adapter problem nesting another that names schema violations is said by its own renderer, never with a bare {violations}', () => {
  const inner = new AdapterProblem('core.adapter.schema', { file: 'tool.aios.yaml' }, [{ pointer: '/tool/name', message: 'must be string', rule: 'ajv', keyword: 'type', params: { type: 'string' } }]);
  const outer = new AdapterProblem('core.adapter.detail', { detail: inner.said });
  // errorText alone does not render it as a plain catalogue message (it would leave "{violations}")…
  assert.equal(saidOf(outer), undefined);
  assert.equal(errorText(outer, 'zh-CN'), outer.message);
  // …and the person's text renders the violations in their language.
  const zh = personErrorText(outer, 'zh-CN');
  assert.doesNotMatch(zh, /\{violations\}/);
  assert.match(zh, /\/tool\/name：应当是 string 类型/);
  // A plain nested message is still rendered by the catalogue.
  assert.ok(saidOf(new AdapterProblem('core.adapter.detail', { detail: 'x' })));
});
