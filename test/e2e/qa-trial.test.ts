/**
 * What a QA trial run found (issue 14), each checked against a CLI-started bridge and agent, as the
 * trial ran them: audit rows after a SIGKILL, invoke's answer to an output that breaks its schema,
 * `cancel`, a relative socket path. Replays, the controls and the CLI's own errors: qa-controls.test.ts.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cliRun, processStack, until } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

describe('QA trial: CLI-started bridge and agent', () => {
  let s: Stack;
  const rt = () => ['--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t'];
  const inv = (args: string[]) => cliRun(['invoke', ...args, ...rt()]);
  const dataDir = () => join(s.dir, '.demo', 'agent-data');
  before(async () => {
    // The agent keeps its data where the demo would, so that commands run in s.dir find it as the demo's;
    // its socket is named relative to its config file (item 9).
    s = await processStack({ agent: { data_dir: './.demo/agent-data', local_endpoint: { host: '127.0.0.1', port: 0, socket: 'agent.sock' } } });
  });
  after(() => s.stop());

  test('a relative local_endpoint.socket is relative to the config file, not to where the agent started', () => {
    const ep = JSON.parse(readFileSync(join(dataDir(), 'endpoint.json'), 'utf8')) as { socket?: string };
    assert.equal(ep.socket, join(s.dir, 'agent.sock'));
    assert.ok(statSync(join(s.dir, 'agent.sock')).isSocket());
  });

  test('a call interrupted by SIGKILL has its row in activity after the restart', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 30_000 }, { wait: false });
    await until(async () => (await s.client.getCall(record.call_id)).state === 'running', 15_000, 'running');
    await s.agent.kill('SIGKILL');
    await s.online(false);
    await s.startAgent();
    const row = (await until(async () => {
      const r = await cliRun(['activity', '--data-dir', dataDir(), '--json']);
      assert.equal(r.code, 0, r.err);
      return (JSON.parse(r.out) as { call_id: string; state: string; error_type: string; function_id: string }[]).find((e) => e.call_id === record.call_id);
    }, 20_000, 'the audit row of the interrupted call'))!;
    assert.equal(row.state, 'unknown');
    assert.equal(row.error_type, 'execution_interrupted');
    assert.equal(row.function_id, 'diagnostics.wait');
    const bridgeSide = await s.client.waitTerminal(record.call_id, 15_000);
    assert.equal(bridgeSide.outcome?.error?.type, 'execution_interrupted');
  });

  test('an output that breaks its schema: invoke prints the pointers and exits 7, not ✓ and 0', async () => {
    const r = await inv(['diagnostics.wait', '--args', '{"ms":0,"fail_with":"bad_output"}']);
    assert.equal(r.code, 7, r.out + r.err);
    assert.doesNotMatch(r.out, /✓/);
    assert.match(r.out, /✗ completed \(output_valid: false\) diagnostics\.wait/);
    assert.match(r.err, /does not match diagnostics\.wait's output_schema/);
    assert.match(r.err, /\/waited_ms: .*integer/);
    // A valid output is unchanged: exit 0.
    const ok = await inv(['diagnostics.wait', '--args', '{"ms":0}']);
    assert.equal(ok.code, 0, ok.err);
  });

  test('cancel <call_id> cancels a running call through the bridge; an unknown id is the bridge\'s refusal', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 60_000 }, { wait: false });
    await until(async () => (await s.client.getCall(record.call_id)).state === 'running', 15_000, 'running');
    const r = await cliRun(['cancel', record.call_id, '--reason', 'qa', ...rt().slice(0, 6)]);
    assert.equal(r.code, 0, r.out + r.err);
    assert.match(r.out, /✗ cancelled diagnostics\.wait/);
    assert.equal((await s.client.getCall(record.call_id)).outcome?.state, 'cancelled');
    const done = await inv(['diagnostics.echo', '--args', '{"value":1}', '--call-id', 'qa-cancel-late']);
    assert.equal(done.code, 0);
    const late = await cliRun(['cancel', 'qa-cancel-late', ...rt().slice(0, 6)]);
    assert.equal(late.code, 1);
    assert.match(late.err, /already ended completed; nothing was cancelled/);
    const none = await cliRun(['cancel', 'no-such-call', ...rt().slice(0, 6)]);
    assert.equal(none.code, 10, none.err);
  });
});
