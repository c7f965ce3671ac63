/**
 * Small truths of issue 28 through CLI-started bridge and agent processes: the device's audit trail and
 * `activity` name the call and the runtime the bridge attested (protocol 1.2 §6.1); agent.log has one line
 * for every call, also one refused at validation (id, function, state, duration, error type; never the
 * arguments).
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cliRun, processStack, until } from '../helpers/stack.js';

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
});
