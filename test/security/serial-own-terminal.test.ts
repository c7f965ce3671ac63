/**
 * Issue 27, finding 1: even an explicit serial grant never covers the agent's own controlling terminal.
 * The agent runs in a tmux pane (its controlling terminal is the pane's pty); its config grants that very
 * pty by path. Every serial call on it is refused `rejected/permission_denied` (rule
 * `controlling_terminal`) before consent, and nothing the call would write reaches the pane.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { agentDoc, bridgeDoc, cli, CLI, ids, ROOT, tempDir, tokens, until, type Proc } from '../helpers/stack.js';

const dir = tempDir('aios-own-tty-');
const SOCKET = join(dir, 'tmux.sock');
const tmux = (...args: string[]): string => execFileSync('tmux', ['-S', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
let bridge: Proc | undefined;

after(async () => {
  try {
    tmux('kill-server');
  } catch {
    // no server left
  }
  await bridge?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test("an explicit grant of the agent's own controlling terminal is refused; nothing reaches the terminal", async () => {
  const t = tokens();
  writeFileSync(join(dir, 'bridge.cfg.json'), JSON.stringify(bridgeDoc(dir, t)));
  bridge = cli(['bridge', '--config', join(dir, 'bridge.cfg.json')]);
  const bridgeFile = join(dir, 'bridge', 'bridge.json');
  await until(() => {
    if (bridge?.child.exitCode !== null) throw new Error(`the bridge exited: ${bridge?.err.slice(-500)}`);
    return existsSync(bridgeFile);
  }, 30_000, 'bridge.json');
  const url = (JSON.parse(readFileSync(bridgeFile, 'utf8')) as { url: string }).url;
  // A pane with a shell first, to learn its pty; the agent is then started in it.
  tmux('new-session', '-d', '-s', 'agent', '-x', '160', '-y', '50', '-c', ROOT, 'sh');
  const paneTty = tmux('display-message', '-p', '-t', 'agent', '#{pane_tty}').trim();
  assert.match(paneTty, /^\/dev\/pts\/\d+$/);
  const acfg = join(dir, 'agent.cfg.json');
  writeFileSync(acfg, JSON.stringify(agentDoc(dir, url, t, { grants: { serial: [{ path: paneTty, alias: 'own' }] }, policy: { 'serial.write': 'allow' }, confirmations: { provider: 'none' }, log: { level: 'info', file: join(dir, 'agent.log') } })));
  const cmd = [process.execPath, '--import', 'tsx', CLI, 'run', '--config', acfg].map((a) => `'${a}'`).join(' ');
  tmux('send-keys', '-t', 'agent', `exec ${cmd}`, 'Enter');
  const client = new RuntimeClient({ bridge_url: url, token: t.runtime, workspace_id: ids.workspace_id, device_id: ids.device_id });
  await until(async () => (await client.device(ids.device_id))['online'] === true, 30_000, 'the agent online');

  for (const [fn, args] of [
    ['serial.write', { port: 'own', data: { text: 'MARKER-FROM-CALL' } }],
    ['serial.request', { port: paneTty, write: { text: 'MARKER-FROM-CALL' }, until: { idle_ms: 50 } }],
    ['serial.get_signals', { port: 'own' }],
  ] as const) {
    const o = (await client.call(fn, args)).record.outcome!;
    assert.deepEqual([o.state, o.error?.type, o.error?.side_effects, o.error?.details?.['rule']], ['rejected', 'permission_denied', 'none', 'controlling_terminal'], `${fn}: ${JSON.stringify(o.error)}`);
  }
  assert.doesNotMatch(tmux('capture-pane', '-p', '-t', 'agent', '-S', '-200'), /MARKER-FROM-CALL/);
});
