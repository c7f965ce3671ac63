/**
 * The advice after a fatal stop, where it is read: the console and `/health`'s English `action` name
 * `aios-device login`; the window has its own sentence for every advice (`core.stop.X` → `ui.stop.X` in
 * electron/renderer/en.json and zh-CN.json) and a title for every stop type; the desktop notice of a
 * revoked `login` sign-in names the window's Sign in as well as the command.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { STOP_ACTION_KEYS, stopAction, stopAdvice, stopAdviceText, stopNoticeAction, type SignInKind } from '../../src/agent/stop-advice.js';
import type { FatalStop } from '../../src/agent/session.js';
import { placeholders, readCatalogueDir } from '../../src/i18n/catalogue.js';

const RENDERER = join(import.meta.dirname, '..', '..', 'electron', 'renderer');
const TYPES = Object.keys(STOP_ACTION_KEYS) as FatalStop['type'][];
const KINDS: SignInKind[] = ['login', 'config'];
const stop = (type: FatalStop['type']): FatalStop => ({ type, message: 'The bridge refused this device\'s token.', details: {} });

test('every stop has English advice and its key; the console and /health name `aios-device login` for a revoked login', () => {
  assert.deepEqual(TYPES.sort(), ['client_outdated', 'identity_mismatch', 'replaced', 'unauthorized', 'unsupported_protocol_version']);
  for (const type of TYPES) {
    for (const kind of KINDS) {
      const a = stopAdvice(stop(type), kind);
      assert.equal(a.type, type);
      assert.equal(a.action_key, STOP_ACTION_KEYS[type][kind]);
      assert.ok(a.action.length > 20 && /^[\x20-\x7e]+$/.test(a.action), `${a.action_key}: one English sentence on the wire`);
      assert.notEqual(stopAction(a, 'zh-CN'), a.action, `${a.action_key} has its Chinese sentence`);
    }
  }
  const revoked = stopAdvice(stop('unauthorized'), 'login');
  assert.match(revoked.action, /^Sign in again with `aios-device login --bridge URL`/);
  assert.match(stopAdviceText(revoked), /^agent stopped connecting to the bridge \(unauthorized\): The bridge refused this device's token\.\n {2}what to do: Sign in again with `aios-device login/);
  assert.match(stopAdviceText(revoked, 'zh-CN'), /处理方法：请用 `aios-device login --bridge URL` 重新登录/);
});

test('the desktop notice of a revoked login names the window\'s Sign in and the command; others say what the console says', () => {
  const revoked = stopAdvice(stop('unauthorized'), 'login');
  assert.equal(stopNoticeAction(revoked), 'Open the AIOS Device window and select Sign in to sign in again (or run `aios-device login`); it reconnects without a restart.');
  assert.match(stopNoticeAction(revoked, 'zh-CN'), /^请打开 AIOS Device 窗口，点击“登录”重新登录/);
  for (const [type, kind] of [['unauthorized', 'config'], ['client_outdated', 'login']] as const) {
    const a = stopAdvice(stop(type), kind);
    assert.equal(stopNoticeAction(a, 'zh-CN'), stopAction(a, 'zh-CN'));
  }
  // An advice from an agent that knows no key (an older one) keeps its own sentence.
  assert.equal(stopNoticeAction({ type: 'unauthorized', message: 'm', action: 'Do this.' }), 'Do this.');
});

test('the window has its own sentence for every advice and a title for every stop, in en and zh-CN, naming no command', () => {
  const tables = readCatalogueDir(RENDERER);
  for (const locale of ['en', 'zh-CN'] as const) {
    const table = tables[locale]!;
    for (const type of TYPES) {
      assert.ok(table[`ui.stop.title.${type}`], `ui.stop.title.${type} in ${locale}`);
      for (const kind of KINDS) {
        const key = STOP_ACTION_KEYS[type][kind].replace(/^core\.stop\./, 'ui.stop.');
        const text = table[key];
        assert.ok(text, `${key} in ${locale}`);
        assert.doesNotMatch(text, /aios-device/, `${key} (${locale}) sends no one to a terminal`);
        assert.deepEqual(placeholders(text), [], `${key} has no placeholders`);
      }
    }
    assert.deepEqual(placeholders(table['ui.stop.title.other']!), ['type']);
  }
  // A revoked login's advice in the window points to its Sign in button, by the button's own label.
  assert.match(tables['en']!['ui.stop.unauthorized.login']!, new RegExp(`Select ${tables['en']!['ui.signin.start']} below`));
  assert.ok(tables['zh-CN']!['ui.stop.unauthorized.login']!.includes(`“${tables['zh-CN']!['ui.signin.start']}”`));
  assert.match(tables['en']!['ui.stop.identity_mismatch.login']!, new RegExp(`select ${tables['en']!['ui.signin.sign_out']} at the top`));
  assert.ok(tables['zh-CN']!['ui.stop.identity_mismatch.login']!.includes(`“${tables['zh-CN']!['ui.signin.sign_out']}”`));
});
