/**
 * Issue 27, finding 6: log files are private. Through the CLI: the bridge's `log.file` in folders that do
 * not exist yet is created 0600 in folders made 0700, and the existing folder above them keeps its mode;
 * an existing log file other users can read (0644) is refused by the bridge and by the agent, with the fix
 * in the message (English and Chinese) and nothing appended; a group-readable one (0640, logrotate's
 * `create 0640 root adm`) is used as it is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, closeSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LogFileError, openLogFile } from '../../src/base/log-file.js';
import { bridgeDoc, cli, procReport, tempDir, tokens, until } from '../helpers/stack.js';

const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);

/**
 * Runs the CLI until it exits, or until `up` exists (it started where it should have refused: killed, and
 * reported as code 'started'), so that a refusal that does not happen fails instead of hanging.
 */
async function refusal(args: string[], up: string, env: Record<string, string> = {}): Promise<{ code: number | null | 'started'; err: string }> {
  const p = cli(args, env);
  let started = false;
  await until(() => p.child.exitCode !== null || p.child.signalCode !== null || (started = existsSync(up)), 30_000, 'the CLI to exit or start');
  if (started) await p.kill('SIGKILL');
  await p.exited;
  return { code: started ? 'started' : p.child.exitCode, err: p.err };
}

/** Writes a bridge config whose log goes to `file`; returns the config path and where bridge.json appears. */
function bridgeConfig(dir: string, file: string): { cfg: string; ready: string } {
  const cfg = join(dir, 'bridge.cfg.json');
  writeFileSync(cfg, JSON.stringify(bridgeDoc(dir, tokens(), { log: { level: 'info', file } })));
  return { cfg, ready: join(dir, 'bridge', 'bridge.json') };
}

test('a new log file is 0600 in new folders 0700; the folder that existed keeps its mode', async () => {
  const dir = tempDir('aios-logs-');
  const shared = join(dir, 'var-log');
  mkdirSync(shared, { mode: 0o755 });
  chmodSync(shared, 0o755);
  const file = join(shared, 'aios', 'bridge', 'bridge.log');
  const { cfg, ready } = bridgeConfig(dir, file);
  const b = cli(['bridge', '--config', cfg]);
  try {
    await until(() => existsSync(ready), 20_000, 'bridge.json').catch((e: Error) => {
      throw new Error(`${e.message}\n${procReport('bridge', b)}`);
    });
    await until(() => readFileSync(file, 'utf8').length > 0, 20_000, 'a log line');
    assert.deepEqual([mode(file), mode(join(shared, 'aios')), mode(join(shared, 'aios', 'bridge')), mode(shared)], ['600', '700', '700', '755']);
  } finally {
    await b.kill('SIGKILL');
  }
});

test('an existing log file other users can read is refused (bridge and agent), with the fix, in en and zh-CN; nothing is appended', async () => {
  const dir = tempDir('aios-logs-');
  const file = join(dir, 'shared.log');
  writeFileSync(file, 'old line\n');
  chmodSync(file, 0o644);
  const { cfg, ready } = bridgeConfig(dir, file);
  const en = await refusal(['bridge', '--config', cfg], ready);
  assert.ok(en.code !== 0 && en.code !== 'started', `exit ${en.code}`);
  assert.match(en.err, new RegExp(`the log file ${file} can be read by other users \\(mode 644\\); make it private with \`chmod o-r ${file}\``));
  const zh = await refusal(['bridge', '--config', cfg], ready, { LC_ALL: 'zh_CN.UTF-8' });
  assert.ok(zh.code !== 0 && zh.code !== 'started', `exit ${zh.code}`);
  assert.match(zh.err, /日志文件 .* 可被其他用户读取（权限 644）；请用 `chmod o-r /);
  const acfg = join(dir, 'agent.cfg.json');
  writeFileSync(acfg, JSON.stringify({ bridge: { url: 'ws://127.0.0.1:9/v1/device', token: 'x'.repeat(32) }, identity: { workspace_id: 'ws_t', user_id: 'usr_t', device_id: 'dev_t' }, data_dir: join(dir, 'agent'), log: { file } }));
  const agent = await refusal(['run', '--config', acfg], join(dir, 'agent', 'endpoint.json'));
  assert.ok(agent.code !== 0 && agent.code !== 'started', `exit ${agent.code}`);
  assert.match(agent.err, /chmod o-r/);
  assert.equal(readFileSync(file, 'utf8'), 'old line\n', 'nothing appended');
  assert.equal(mode(file), '644', 'the file is not changed behind the admin\'s back');
});

test('a group-readable log file (0640) is accepted and appended to', async () => {
  const dir = tempDir('aios-logs-');
  const file = join(dir, 'rotated.log');
  writeFileSync(file, 'old line\n');
  chmodSync(file, 0o640);
  const { cfg, ready } = bridgeConfig(dir, file);
  const b = cli(['bridge', '--config', cfg]);
  try {
    await until(() => existsSync(ready), 20_000, 'bridge.json').catch((e: Error) => {
      throw new Error(`${e.message}\n${procReport('bridge', b)}`);
    });
    await until(() => readFileSync(file, 'utf8').length > 'old line\n'.length, 20_000, 'a log line appended');
    assert.ok(readFileSync(file, 'utf8').startsWith('old line\n'));
    assert.equal(mode(file), '640');
  } finally {
    await b.kill('SIGKILL');
  }
});

test('a log file the program chose itself (demo, tray default) that an older version left 0644 is made 0600, not refused', () => {
  const dir = tempDir('aios-logs-');
  const file = join(dir, 'agent.log');
  writeFileSync(file, 'old line\n');
  chmodSync(file, 0o644);
  assert.throws(() => openLogFile(file), (e: unknown) => e instanceof LogFileError && e.said.params.mode === '644');
  const fd = openLogFile(file, true);
  closeSync(fd);
  assert.equal(mode(file), '600');
});
