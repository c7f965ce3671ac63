/**
 * The command line speaks the user's language (LC_ALL / LANG), from the `cli.` catalogue: usage errors,
 * listings, the words around a wire error (whose `type` and English `message` stay as they came).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliRun } from '../helpers/stack.js';
import { cliEn, cliZh } from '../../src/i18n/cli.js';
import { placeholders } from '../../src/i18n/catalogue.js';
import { EXIT_BRIDGE_UNREACHABLE } from '../../src/cli/exit-codes.js';

const ZH = { LC_ALL: 'zh_CN.UTF-8', LANG: 'zh_CN.UTF-8' };

test('every cli string has a Chinese translation with the same placeholders', () => {
  for (const [k, en] of Object.entries(cliEn)) {
    const zh = cliZh[k as keyof typeof cliEn];
    assert.ok(zh, `${k} has a zh-CN string`);
    // cli.error.line: English shows the wire's English message; Chinese names the error and says what it means (core.error.*).
    if (k !== 'cli.error.line') assert.deepEqual(placeholders(zh), placeholders(en), k);
    if (/[a-z]{4,}/.test(en.replace(/\{[^}]+\}|`[^`]*`|--[\w-]+|aios-device|[\w./-]+\.(md|json|yaml|ts)|AIOS Device|[A-Z_]{2,}|https?:\S+/g, ''))) {
      assert.match(zh, /[\u4e00-\u9fff]/, `${k} is translated, not copied`);
    }
  }
});

test('a usage error is in Chinese under zh_CN and in English otherwise; the exit code is the same', async () => {
  const args = ['invoke', 'device.info', '--bridge', 'http://127.0.0.1:9', '--workspace', 'ws'];
  const zh = await cliRun(args, { ...ZH, AIOS_RUNTIME_TOKEN: '' });
  const en = await cliRun(args, { AIOS_RUNTIME_TOKEN: '' });
  assert.equal(zh.code, 64);
  assert.equal(en.code, 64);
  assert.match(zh.err, /aios-device：缺少 token：请传入 --token，或使用 --runtime 配置文件/);
  assert.match(en.err, /aios-device: missing token: pass --token or a --runtime profile/);
});

test('a listing of the consent database speaks the user language', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aios-cli-i18n-'));
  try {
    const data = join(dir, 'data');
    const zh = await cliRun(['decisions', '--data-dir', data], ZH);
    assert.equal(zh.code, 0, zh.err);
    assert.match(zh.out, /没有已记住的决定。/);
    const en = await cliRun(['activity', '--data-dir', data]);
    assert.equal(en.code, 0, en.err);
    assert.match(en.out, /No calls recorded\./);
    const bad = await cliRun(['activity', '--data-dir', data, '--limit', '0'], ZH);
    assert.equal(bad.code, 64);
    assert.match(bad.err, /--limit 必须是正整数。/);
    const since = await cliRun(['activity', '--data-dir', data, '--since', 'yesterday'], ZH);
    assert.equal(since.code, 64);
    assert.match(since.err, /--since：“yesterday”既不是时间/);
    const sinceEn = await cliRun(['activity', '--data-dir', data, '--since', '2h']);
    assert.equal(sinceEn.code, 0, sinceEn.err);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a number option that is not a whole number in range is a usage error naming the flag, not NaN', async () => {
  const base = ['invoke', 'device.info', '--bridge', 'http://127.0.0.1:9', '--workspace', 'ws', '--device', 'dev'];
  for (const bad of ['abc', '1.5', '12ms', '0', '86400001']) {
    const en = await cliRun([...base, '--timeout-ms', bad]);
    assert.equal(en.code, 64, `--timeout-ms ${bad}: ${en.err}`);
    assert.match(en.err, new RegExp(`--timeout-ms takes a whole number from 1 to 86400000, not "${bad.replace('.', '\\.')}"`));
  }
  // A good value passes: the call goes on to the (unreachable) bridge.
  const good = await cliRun([...base, '--timeout-ms', '5000', '--confirm-timeout-ms', ' 600 '], { AIOS_RUNTIME_TOKEN: 't' });
  assert.equal(good.code, EXIT_BRIDGE_UNREACHABLE, good.err);
  const zh = await cliRun([...base, '--confirm-timeout-ms', 'soon'], ZH);
  assert.equal(zh.code, 64);
  assert.match(zh.err, /--confirm-timeout-ms 需要 1 到 86400000 之间的整数，而不是“soon”/);
  const port = await cliRun(['demo', '--port', '70000']);
  assert.equal(port.code, 64);
  assert.match(port.err, /--port takes a whole number from 0 to 65535, not "70000"/);
});
