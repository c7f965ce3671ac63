/**
 * What a QA trial run found (issue 14), each checked against a CLI-started bridge and agent, as the
 * trial ran them: audit rows after a SIGKILL, invoke's answer to an output that breaks its schema,
 * `cancel`, the controls finding the agent `status` finds, a relative socket path.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cliRun, Proc, processStack, tempDir, until } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

/** The CLI run from another folder (the tsx loader named by its absolute URL, so any cwd works). */
function cliIn(cwd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  const p = new Proc(spawn(process.execPath, ['--import', import.meta.resolve('tsx'), CLI, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  return p.exited.then((code) => ({ code, out: p.out, err: p.err }));
}

describe('QA trial: CLI-started bridge and agent', () => {
  let s: Stack;
  let home: string;
  const rt = () => ['--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t'];
  const inv = (args: string[]) => cliRun(['invoke', ...args, ...rt()]);
  const dataDir = () => join(s.dir, '.demo', 'agent-data');
  before(async () => {
    home = tempDir('aios-qa-home-');
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

  test('a replay of a call that never ran does not say it ran', async () => {
    const first = await inv(['diagnostics.confirm', '--call-id', 'qa-never-ran']);
    assert.equal(first.code, 2, first.out);
    assert.match(first.out, /confirmation_unavailable/);
    const again = await inv(['diagnostics.confirm', '--call-id', 'qa-never-ran']);
    assert.equal(again.code, 2, again.out);
    assert.match(again.out, /replayed: this call_id was seen before and never ran/);
    assert.doesNotMatch(again.out, /already ran/);
    const ran = await inv(['diagnostics.echo', '--args', '{"value":4}', '--call-id', 'qa-ran']);
    assert.equal(ran.code, 0);
    assert.match((await inv(['diagnostics.echo', '--args', '{"value":4}', '--call-id', 'qa-ran'])).out, /replayed: this call_id already ran; its stored outcome is returned and nothing ran again/);
  });

  test('pause without --data-dir acts on the agent status finds, says which folder, and status shows it paused', async () => {
    const env = { HOME: home, XDG_DATA_HOME: join(home, 'data') };
    const p = await cliIn(s.dir, ['pause'], env);
    assert.equal(p.code, 0, p.err);
    assert.match(p.err, new RegExp(`Acting on ${dataDir().replace(/[.]/g, '\\.')} \\(the demo's agent`));
    assert.doesNotMatch(p.err, /No agent is running/);
    const refused = await inv(['diagnostics.echo', '--args', '{"value":2}']);
    assert.equal(refused.code, 2, refused.out);
    assert.match(refused.out, /paused/);
    const st = await cliIn(s.dir, ['status', '--json', ...rt()], env);
    const out = JSON.parse(st.out) as { agent: { running: boolean; data_dir: string; paused?: { paused: boolean; by: string } } };
    assert.equal(out.agent.running, true, st.out + st.err);
    assert.equal(out.agent.data_dir, dataDir());
    assert.equal(out.agent.paused?.paused, true);
    const text = await cliIn(s.dir, ['status', ...rt()], env);
    assert.match(text.out, /paused: yes, since .* by cli/);
    const r = await cliIn(s.dir, ['resume'], env);
    assert.equal(r.code, 0, r.err);
    assert.equal((await inv(['diagnostics.echo', '--args', '{"value":3}'])).code, 0);
    // Elsewhere, with no demo: the default folder is named, and that no agent runs there.
    const other = tempDir('aios-qa-cwd-');
    mkdirSync(join(home, 'data'), { recursive: true });
    const d = await cliIn(other, ['pause'], env);
    assert.equal(d.code, 0, d.err);
    assert.match(d.err, /Acting on .*aios-device \(the default data folder\)/);
    assert.match(d.err, /No agent is running with the data folder/);
    assert.ok(existsSync(join(home, 'data', 'aios-device', 'consent.sqlite')));
  });
});

test('a bridge that does not answer is named, with its own exit code (11), not "fetch failed" and 1', async () => {
  const r = await cliRun(['invoke', 'device.info', '--bridge', 'http://127.0.0.1:9', '--token', 'x', '--workspace', 'w', '--device', 'd']);
  assert.equal(r.code, 11, r.err);
  assert.match(r.err, /cannot reach the bridge at http:\/\/127\.0\.0\.1:9 \(ECONNREFUSED\)/);
  assert.doesNotMatch(r.err, /fetch failed/);
});

test('a runtime profile without device_id: invoke and functions say so and what to pass (exit 64)', async () => {
  const dir = tempDir();
  try {
    const f = join(dir, 'runtime.json');
    writeFileSync(f, JSON.stringify({ bridge_url: 'http://127.0.0.1:9', token: 't', workspace_id: 'w' }));
    for (const cmd of ['invoke device.info', 'functions']) {
      const r = await cliRun([...cmd.split(' '), '--runtime', f]);
      assert.equal(r.code, 64, cmd + ': ' + r.err);
      assert.match(r.err, /the runtime profile has no device_id; pass --device ID/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
