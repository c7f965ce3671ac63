/**
 * End-to-end: the bridge and the agent as separate processes started from the CLI, as a user or QA
 * would run them; runtime calls through `aios-device invoke` and the HTTP API.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliRun, processStack, tempDir, until } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

describe('CLI-started bridge and agent', () => {
  let s: Stack;
  const inv = (args: string[]) => cliRun(['invoke', ...args, '--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t']);
  before(async () => {
    s = await processStack();
  });
  after(() => s.stop());

  test('invoke device.info completes (exit 0) and prints the output', async () => {
    const r = await inv(['device.info']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /✓ completed device\.info/);
    assert.match(r.out, /"functions"/);
  });

  test('status finds the running agent through its config, and the bridge\'s devices', async () => {
    const r = await cliRun(['status', '--config', s.agentConfig, '--json', '--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t']);
    assert.equal(r.code, 0, r.err);
    const out = JSON.parse(r.out) as { agent: { running?: boolean; http?: string }; devices?: { id?: string; device_id?: string }[] };
    assert.equal(out.agent.running, true, r.out);
    assert.match(out.agent.http ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(JSON.stringify(out.devices).includes('dev_t'), r.out);
  });

  test('the same call_id twice runs once; the second says replayed', async () => {
    const a = await inv(['diagnostics.echo', '--args', '{"value":7}', '--call-id', 'cli-dup-1', '--json']);
    const b = await inv(['diagnostics.echo', '--args', '{"value":7}', '--call-id', 'cli-dup-1', '--json']);
    assert.equal(a.code, 0);
    assert.equal(b.code, 0);
    const ra = JSON.parse(a.out) as { outcome: { replayed: boolean; started_at: string } };
    const rb = JSON.parse(b.out) as { outcome: { replayed: boolean; started_at: string } };
    assert.equal(ra.outcome.replayed, false);
    assert.equal(rb.outcome.replayed, true);
    assert.equal(rb.outcome.started_at, ra.outcome.started_at);
    const c = await inv(['diagnostics.echo', '--args', '{"value":8}', '--call-id', 'cli-dup-1']);
    assert.equal(c.code, 10);
    assert.match(c.err, /idempotency_conflict/);
  });

  test('bad arguments: invalid_arguments with a pointer, exit 8 (a contract error); unknown function likewise', async () => {
    const r = await inv(['diagnostics.wait', '--args', '{"ms":-5}']);
    assert.equal(r.code, 8);
    assert.match(r.out, /invalid_arguments/);
    assert.match(r.out, /"pointer":"\/ms"/);
    const u = await inv(['no.such_function']);
    assert.equal(u.code, 8);
    assert.match(u.out, /unknown_function/);
  });

  test('SIGKILL while a call runs: after restart it ends unknown/execution_interrupted and never runs again', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 30_000 }, { wait: false });
    await until(async () => (await s.client.getCall(record.call_id)).state === 'running', 10_000, 'running');
    await s.agent.kill('SIGKILL');
    await s.online(false);
    await s.startAgent();
    const r = await s.client.waitTerminal(record.call_id, 15_000);
    assert.equal(r.outcome?.state, 'unknown');
    assert.equal(r.outcome?.error?.type, 'execution_interrupted');
    assert.equal(r.outcome?.error?.side_effects, 'possible');
    // Asking again with the same call_id returns the recorded outcome; nothing re-runs.
    const again = await s.client.call('diagnostics.wait', { ms: 30_000 }, { call_id: record.call_id });
    assert.equal(again.record.outcome?.state, 'unknown');
    assert.equal(again.record.outcome?.replayed, true);
    const after = await s.client.getCall(record.call_id);
    assert.equal(after.timeline.filter((t) => t.state === 'running').length, 1, 'it entered running once, before the kill');
  });

  test('SIGTERM stops cleanly: the running call is aborted, journalled and reported after the restart', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 30_000 }, { wait: false });
    await until(async () => (await s.client.getCall(record.call_id)).state === 'running', 10_000, 'running');
    const code = await s.agent.kill('SIGTERM');
    assert.equal(code, 0, 'exit 0 after a clean stop');
    await s.startAgent();
    const r = await s.client.waitTerminal(record.call_id, 15_000);
    assert.equal(r.outcome?.error?.type, 'execution_interrupted');
    assert.equal(r.outcome?.error?.side_effects, 'none', 'the handler stopped on its abort signal');
  });

  test('a bridge restart mid-call loses no record: the outcome arrives by call.report', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 1500 }, { wait: false });
    await until(async () => (await s.client.getCall(record.call_id)).state === 'running', 10_000, 'running');
    await s.restartBridge();
    const r = await s.client.waitTerminal(record.call_id, 20_000);
    assert.equal(r.outcome?.state, 'completed');
  });

  test('device_offline once the agent is gone (exit 10)', async () => {
    await s.agent.kill('SIGTERM');
    await s.online(false);
    const r = await inv(['device.info']);
    assert.equal(r.code, 10);
    assert.match(r.err, /device_offline/);
    await s.startAgent();
  });
});

test('a config error names the key and exits 64', async () => {
  const dir = tempDir();
  const f = join(dir, 'agent.yaml');
  writeFileSync(f, 'data_dir: ./d\nlimits: { max_concurent_calls: 3 }\nconfirmations: { provider: popup }\n');
  try {
    const r = await cliRun(['run', '--config', f]);
    assert.equal(r.code, 64);
    assert.match(r.err, /unknown key "limits\.max_concurent_calls"/);
    assert.match(r.err, /"confirmations\.provider" must be one of "auto", "ui", "tty", "none"/);
    // The bridge's config: a password that is not a hash and a log level pino does not know.
    const b = join(dir, 'bridge.yaml');
    writeFileSync(b, 'data_dir: ./b\nlog: { level: verbose }\nusers: [{ id: ann, password_hash: hunter2, workspaces: [ws] }]\n');
    const rb = await cliRun(['bridge', '--config', b]);
    assert.equal(rb.code, 64, rb.err);
    assert.match(rb.err, /log\.level/);
    const hb = join(dir, 'bridge-hash.yaml');
    writeFileSync(hb, 'data_dir: ./b\nusers: [{ id: ann, password_hash: hunter2, workspaces: [ws] }]\n');
    const rh = await cliRun(['bridge', '--config', hb]);
    assert.equal(rh.code, 64, rh.err);
    assert.match(rh.err, /users\[0\]\.password_hash.*not a scrypt hash.*hash-password/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('usage mistakes in the consent commands exit 64 with the reason', async () => {
  const dir = tempDir();
  try {
    const since = await cliRun(['activity', '--since', 'nonsense', '--data-dir', dir]);
    assert.equal(since.code, 64);
    assert.match(since.err, /--since: "nonsense" is neither a time nor a duration/);
    const revoke = await cliRun(['decisions', 'revoke', '--data-dir', dir]);
    assert.equal(revoke.code, 64);
    assert.match(revoke.err, /Usage: aios-device decisions revoke ID/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('status does not call an agent running when only its endpoint.json is left from a crash', async () => {
  const dir = tempDir();
  try {
    // A pid that is certainly gone, and an address nobody answers on.
    writeFileSync(join(dir, 'endpoint.json'), JSON.stringify({ pid: 2 ** 22 + 7, http: 'http://127.0.0.1:9', version: '0.1.0' }));
    const r = await cliRun(['status', '--data-dir', dir, '--json']);
    const out = JSON.parse(r.out) as { agent: { running?: boolean; pid?: number } };
    assert.equal(out.agent.running, false, r.out + r.err);
    assert.equal(out.agent.pid, undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the CLI works for a user with no passwd entry (a container run with an arbitrary uid)', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const { accessSync, constants } = await import('node:fs');
  const { CLI } = await import('../helpers/stack.js');
  // A user namespace where this process's uid is 54321, which has no passwd entry. Files keep their
  // real owner, so the CLI reads the checkout wherever it is: setpriv --reuid could not read a clone in
  // a 0700 temp folder (as CI clones), so this test was skipped there.
  const userns = ['--user', '--map-user=54321', '--map-group=54321', '--'];
  const probe = spawnSync('unshare', [...userns, 'id', '-u'], { encoding: 'utf8' });
  if (probe.status !== 0 || probe.stdout.trim() !== '54321') return t.skip(`needs user namespaces (unshare --user): ${probe.stderr || probe.error?.message || ''}`.trim());
  accessSync(CLI, constants.R_OK);
  assert.notEqual(spawnSync('getent', ['passwd', '54321']).status, 0, 'uid 54321 has a passwd entry here');
  const r = spawnSync('unshare', [...userns, process.execPath, '--import', 'tsx', CLI, 'invoke', '--help'], { encoding: 'utf8', env: { ...process.env, HOME: '/tmp' } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /--requester <name>/);
});
