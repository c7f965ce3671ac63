/**
 * Issue 31 §3: the violations of an `invalid_arguments` call are said in the user's language by the CLI
 * (ajv-i18n's words, checked again against the descriptor the device published); the wire's
 * `details.violations` stay English (`--json`), and English users see the wire's details as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cliRun, ids, processStack } from '../helpers/stack.js';
import { slow } from '../helpers/wait.js';

const ZH = { LC_ALL: 'zh_CN.UTF-8', LANG: 'zh_CN.UTF-8' };
const EN = { LC_ALL: 'C.UTF-8' };

test('invalid_arguments: the violations in Chinese under zh_CN, the wire details in English otherwise; functions lists titles and levels in the user language', { timeout: slow(180_000) }, async () => {
  const s = await processStack({ agent: { handlers: { diagnostics: { enabled: true } } } });
  try {
    const rt = { AIOS_RUNTIME_TOKEN: s.tokens.runtime };
    const inv = ['invoke', 'diagnostics.wait', '--args', '{"ms":"soon","extra":1}', '--bridge', s.url, '--workspace', ids.workspace_id, '--device', ids.device_id];
    const zh = await cliRun(inv, { ...ZH, ...rt });
    assert.match(zh.out, /参数无效（invalid_arguments）：调用的参数不符合这个功能的要求。/, zh.out + zh.err);
    assert.match(zh.out, /\/ms.*应当是 integer 类型/, zh.out);
    assert.doesNotMatch(zh.out, /must be integer/, 'no English violation for a Chinese reader');
    const en = await cliRun(inv, { ...EN, ...rt });
    assert.match(en.out, /invalid_arguments: /);
    assert.match(en.out, /must be integer/, en.out);
    const json = await cliRun([...inv, '--json'], { ...ZH, ...rt });
    assert.match(json.out, /must be integer/, 'the --json record keeps the wire details');

    // `functions`: the level in words and a built-in function's title from its handler's catalogue.
    const fns = ['functions', '--bridge', s.url, '--workspace', ids.workspace_id, '--device', ids.device_id];
    const zhFns = await cliRun(fns, { ...ZH, ...rt });
    assert.match(zhFns.out, /^diagnostics\.wait +公开 +等待$/m, zhFns.out);
    assert.match(zhFns.out, /^device\.info +公开 +设备信息$/m, zhFns.out);
    const enFns = await cliRun(fns, { ...EN, ...rt });
    assert.match(enFns.out, /^device\.info +public +Device information$/m, enFns.out);
  } finally {
    await s.stop();
  }
});
