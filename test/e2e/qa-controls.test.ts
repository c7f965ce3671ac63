/**
 * What a QA trial run found (issue 14), part two: the replay wording and the user's controls acting on
 * the agent `status` finds, against a CLI-started bridge and agent; and the CLI's answers when the bridge
 * is unreachable or the runtime profile names no device. (Split from qa-trial.test.ts so each file stays
 * well inside the runner's per-file budget on a busy machine.)
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cliRun, Proc, processStack, tempDir } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

/** The CLI run from another folder (the tsx loader named by its absolute URL, so any cwd works). */
function cliIn(cwd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  const p = new Proc(spawn(process.execPath, ['--import', import.meta.resolve('tsx'), CLI, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  return p.exited.then((code) => ({ code, out: p.out, err: p.err }));
}

describe('QA trial: replays and the controls, CLI-started bridge and agent', () => {
  let s: Stack;
  let home: string;
  const rt = () => ['--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t'];
  const inv = (args: string[]) => cliRun(['invoke', ...args, ...rt()]);
  const dataDir = () => join(s.dir, '.demo', 'agent-data');
  before(async () => {
    home = tempDir('aios-qa-home-');
    // The agent keeps its data where the demo would, so that commands run in s.dir find it as the demo's.
    s = await processStack({ agent: { data_dir: './.demo/agent-data' } });
  });
  after(() => s.stop());

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
  // A port that was free a moment ago: nobody listens there.
  const { createServer } = await import('node:net');
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as { port: number }).port;
  await new Promise((r) => probe.close(r));
  const r = await cliRun(['invoke', 'device.info', '--bridge', `http://127.0.0.1:${port}`, '--token', 'x', '--workspace', 'w', '--device', 'd']);
  assert.equal(r.code, 11, r.err);
  assert.match(r.err, new RegExp(`cannot reach the bridge at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));
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
