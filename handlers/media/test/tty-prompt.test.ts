/**
 * The capture prompt in a real pseudo-terminal: `aios-device run` (confirmations by the `tty` provider)
 * runs in a tmux session against a CLI-started bridge; the test reads the screen with `capture-pane` and
 * types the answer. lavfi stands in for the camera. Deny → rejected/user_rejected and nothing opened.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { newCallId } from '../../../src/protocol/call-id.js';
import { callLocal } from '../../../src/endpoint/local-client.js';
import { RuntimeClient } from '../../../src/runtime-client/client.js';
import { agentDoc, bridgeDoc, cli, CLI, ids, ROOT, tempDir, tokens, until, type Proc } from '../../../test/helpers/stack.js';
import { LAVFI_CAMERA } from './peers.js';

const dir = tempDir('aios-media-tty-');
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

test('tty: the capture prompt names the camera; "d" denies, the call is rejected/user_rejected and the camera is never opened', async () => {
  const t = tokens();
  // The bridge makes its data folder itself (0700); one made here with the default mode would be refused.
  writeFileSync(join(dir, 'bridge.cfg.json'), JSON.stringify(bridgeDoc(dir, t)));
  bridge = cli(['bridge', '--config', join(dir, 'bridge.cfg.json')]);
  const bridgeFile = join(dir, 'bridge', 'bridge.json');
  await until(() => {
    if (bridge?.child.exitCode !== null) throw new Error(`the bridge exited: ${bridge?.err.slice(-500)}`);
    return existsSync(bridgeFile);
  }, 30_000, 'bridge.json').catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; bridge said: ${bridge?.err.slice(-500)}`);
  });
  const url = (JSON.parse(readFileSync(bridgeFile, 'utf8')) as { url: string }).url;
  const acfg = join(dir, 'agent.cfg.json');
  writeFileSync(
    acfg,
    JSON.stringify(agentDoc(dir, url, t, { grants: { cameras: ['*'] }, confirmations: { provider: 'tty', timeout_ms: 60_000 }, handlers: { media: { backend: 'ffmpeg', probe: false, devices: [LAVFI_CAMERA] } }, log: { level: 'info', file: join(dir, 'agent.log') } })),
  );
  const cmd = [process.execPath, '--import', 'tsx', CLI, 'run', '--config', acfg].map((a) => `'${a}'`).join(' ');
  tmux('new-session', '-d', '-s', 'agent', '-x', '160', '-y', '50', '-c', ROOT, `sh -c "${cmd}; echo AGENT-EXITED; sleep 600"`);
  const screen = (): string => tmux('capture-pane', '-p', '-t', 'agent', '-S', '-100');
  const client = new RuntimeClient({ bridge_url: url, token: t.runtime, workspace_id: ids.workspace_id, device_id: ids.device_id });
  await until(async () => (await client.device(ids.device_id))['online'] === true, 30_000, 'the agent online');
  const dataDir = join(dir, 'agent');
  const local = { http: (JSON.parse(readFileSync(join(dataDir, 'endpoint.json'), 'utf8')) as { http: string }).http, token: readFileSync(join(dataDir, 'local-token'), 'utf8').trim() };
  const opened = async () => ((await callLocal(local, 'control.status', {})) as { handlers: { media: { opened: number } } }).handlers.media.opened;
  const before = await opened();

  const call_id = newCallId();
  const call = client.call('camera.capture_photo', { format: 'png' }, { call_id, confirm_timeout_ms: 60_000, requester: { kind: 'agent', id: 'agt', name: 'Shelf assistant' } });
  const s = await until(() => {
    const text = screen();
    return text.includes('[a] allow once') && /Time left: \d+ s/.test(text) ? text : undefined;
  }, 30_000, 'the prompt on the terminal');
  assert.match(s!, /runtime-1 \(says it is "Shelf assistant"\)/);
  assert.match(s!, /Take a photo with Test camera \(lavfi testsrc\) \(its own size, PNG\)/);
  tmux('send-keys', '-t', 'agent', 'd');
  const o = (await call).record.outcome!;
  assert.equal(o.state, 'rejected');
  assert.equal(o.error?.type, 'user_rejected');
  assert.equal(await opened(), before, 'the camera was never opened');
});
