/**
 * Small truths of issue 28 through CLI-started bridge and agent processes: the device's audit trail and
 * `activity` name the call and the runtime the bridge attested (protocol 1.2 §6.1); agent.log has one line
 * for every call, also one refused at validation (id, function, state, duration, error type; never the
 * arguments); a timed-out call whose handler ignored its signal says it did not stop, `side_effects: possible`;
 * a policy `allow` that cannot take effect (confirmation `always`) is refused at start.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliRun, processStack, tempDir, until } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

describe('what the device records of a call', () => {
  let s: Stack;
  const inv = (args: string[]) => cliRun(['invoke', ...args, '--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t']);
  before(async () => {
    s = await processStack();
  });
  after(() => s.stop());

  test('activity shows the call id and the attested runtime (the token entry with no name is runtime-1)', async () => {
    const r = await inv(['diagnostics.echo', '--args', '{"value":1}', '--call-id', 'truth-rt-1']);
    assert.equal(r.code, 0, r.err);
    const data = join(s.dir, 'agent');
    const rows = await until(async () => {
      const a = await cliRun(['activity', '--json', '--data-dir', data]);
      const all = JSON.parse(a.out) as { call_id: string; runtime_id: string | null; runtime_name: string | null }[];
      return all.find((x) => x.call_id === 'truth-rt-1') ? all : undefined;
    }, 10_000, 'the audit row');
    const row = rows!.find((x) => x.call_id === 'truth-rt-1')!;
    assert.equal(row.runtime_id, 'runtime-1');
    const table = await cliRun(['activity', '--data-dir', data]);
    assert.match(table.out, /CALL\s+FUNCTION\s+ON\s+RUNTIME\s+REQUESTER/);
    assert.match(table.out, /truth-rt-1\s+diagnostics\.echo\s+-\s+runtime-1\s/);
  });

  test('agent.log has a line for a call refused at validation, without its arguments', async () => {
    const r = await inv(['diagnostics.wait', '--args', '{"ms":-5,"lock":"secret-value-xyz"}', '--call-id', 'truth-log-1']);
    assert.equal(r.code, 8, r.out + r.err);
    const line = await until(() => s.agentLog().split('\n').find((l) => l.includes('"truth-log-1"')), 10_000, 'the log line');
    const l = JSON.parse(line!) as Record<string, unknown>;
    assert.equal(l['msg'], 'call finished');
    assert.equal(l['function'], 'diagnostics.wait');
    assert.equal(l['state'], 'failed');
    assert.equal(l['error_type'], 'invalid_arguments');
    assert.ok('duration_ms' in l);
    assert.ok(!s.agentLog().includes('secret-value-xyz'), 'never the arguments');
  });

  test('functions --device <offline> prints the cached list with exit 0 and says the device is offline (en, zh-CN)', async () => {
    const args = ['functions', '--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t'];
    const online = await cliRun(args);
    assert.equal(online.code, 0, online.err);
    assert.doesNotMatch(online.err, /offline/);
    await s.agent.kill('SIGTERM');
    await s.online(false);
    try {
      const off = await cliRun(args);
      assert.equal(off.code, 0, off.err);
      assert.match(off.out, /diagnostics\.echo/, 'the cached list');
      assert.match(off.err, /dev_t is offline: these are the functions it last published \(last seen /);
      const zh = await cliRun(args, { LC_ALL: 'zh_CN.UTF-8', LANG: 'zh_CN.UTF-8' });
      assert.match(zh.err, /dev_t 当前离线/);
    } finally {
      await s.startAgent();
    }
  });

  test('a timeout whose handler ignored the abort says it did not stop within the grace period, side_effects possible', async () => {
    const r = await inv(['diagnostics.wait', '--args', '{"ms":1500,"steps":1,"ignore_abort":true}', '--timeout-ms', '300', '--json']);
    assert.equal(r.code, 1, r.out + r.err);
    const rec = JSON.parse(r.out) as { outcome: { state: string; error: { type: string; message: string; side_effects: string } } };
    assert.equal(rec.outcome.error.type, 'timeout');
    assert.match(rec.outcome.error.message, /did not stop within the grace period/);
    assert.doesNotMatch(rec.outcome.error.message, /was stopped/);
    assert.equal(rec.outcome.error.side_effects, 'possible');
  });
});

test('run refuses a policy allow for a function whose confirmation is always (diagnostics.confirm), exit 64, in en and zh-CN', async () => {
  const dir = tempDir();
  try {
    const cfg = join(dir, 'agent.json');
    writeFileSync(cfg, JSON.stringify({ data_dir: join(dir, 'data'), local_endpoint: { host: '127.0.0.1', port: 0, socket: false }, handlers: { diagnostics: { enabled: true } }, policy: { 'diagnostics.confirm': 'allow' } }));
    const en = await cliRun(['run', '-c', cfg]);
    assert.equal(en.code, 64, en.err);
    assert.match(en.err, /policy\.diagnostics\.confirm: this function always asks for confirmation, so allow cannot take effect/);
    const zh = await cliRun(['run', '-c', cfg], { LC_ALL: 'zh_CN.UTF-8', LANG: 'zh_CN.UTF-8' });
    assert.equal(zh.code, 64, zh.err);
    assert.match(zh.err, /policy\.diagnostics\.confirm：此功能每次都要求确认/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
