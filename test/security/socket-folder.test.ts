/**
 * Issue 27, finding 4: with XDG_RUNTIME_DIR unset, another user who pre-creates the old fallback folder
 * (`<tmp>/aios-device-<user>`) no longer stops the agent. The CLI-started agent puts its socket in its
 * private data folder; when that path is too long for `sun_path` it uses a folder with a random name
 * created 0700 (`mkdtemp`), records it in `endpoint.json` and removes it when it stops. TMPDIR points at a
 * folder of this test, so the real /tmp is left alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { basename, dirname, join } from 'node:path';
import { cli, procReport, tempDir, until } from '../helpers/stack.js';
import { osUserName } from '../../src/identity/os-user.js';

const NOBODY = 65534;

/** A temp dir where another uid already owns `aios-device-<user>` (the old, predictable fallback folder). */
function squattedTmp(): string {
  const tmp = tempDir('aios-tmpdir-');
  const user = osUserName()?.replace(/[^A-Za-z0-9_.-]/g, '_') ?? 'user';
  const squat = join(tmp, `aios-device-${user}`);
  mkdirSync(squat, { mode: 0o755 });
  chownSync(squat, NOBODY, NOBODY);
  return tmp;
}

/** Starts `run` with no XDG_RUNTIME_DIR and TMPDIR=`tmp`; resolves with endpoint.json once written. */
async function startAgent(dataDir: string, tmp: string) {
  const dir = dirname(dataDir);
  mkdirSync(dir, { recursive: true });
  const cfg = join(dir, 'agent.json');
  // No bridge is needed to start: the session keeps retrying a closed port in the background.
  writeFileSync(cfg, JSON.stringify({ bridge: { url: 'ws://127.0.0.1:9/v1/device', token: 'x'.repeat(32) }, identity: { workspace_id: 'ws_t', user_id: 'usr_t', device_id: 'dev_t' }, data_dir: dataDir, local_endpoint: { host: '127.0.0.1', port: 0 } }));
  const p = cli(['run', '--config', cfg], { XDG_RUNTIME_DIR: '', TMPDIR: tmp });
  const file = join(dataDir, 'endpoint.json');
  await until(() => existsSync(file) || p.child.exitCode !== null, 30_000, 'endpoint.json').catch((e: Error) => {
    throw new Error(`${e.message}\n${procReport('agent', p)}`);
  });
  assert.ok(existsSync(file), `the agent did not start:\n${procReport('agent', p)}`);
  return { p, endpoint: JSON.parse(readFileSync(file, 'utf8')) as { socket?: string } };
}

/** GET /health over the Unix socket (no token: the socket's owner is the check); the status code. */
function healthOver(socketPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/health', method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', reject);
    req.end();
  });
}

test('another uid owns the old fallback folder: the agent starts, its socket is in its data folder', async () => {
  const tmp = squattedTmp();
  const dataDir = join(tempDir('aios-sock-'), 'data');
  const { p, endpoint } = await startAgent(dataDir, tmp);
  try {
    assert.equal(endpoint.socket, join(dataDir, 'agent.sock'));
    assert.equal(statSync(endpoint.socket).mode & 0o777, 0o600);
    assert.equal(await healthOver(endpoint.socket), 200);
  } finally {
    await p.kill('SIGKILL');
  }
});

test('a data folder too long for sun_path: a random 0700 folder of ours, recorded in endpoint.json, removed at stop', async () => {
  const tmp = squattedTmp();
  const dataDir = join(tempDir('aios-sock-'), 'a-data-folder-whose-path-is-long'.repeat(3), 'data');
  assert.ok(Buffer.byteLength(join(dataDir, 'agent.sock')) > 107);
  const { p, endpoint } = await startAgent(dataDir, tmp);
  const sock = endpoint.socket!;
  const folder = dirname(sock);
  try {
    assert.equal(dirname(folder), tmp);
    assert.match(basename(folder), /^aios-device-.+-[A-Za-z0-9]{6}$/);
    const st = statSync(folder);
    assert.deepEqual([st.mode & 0o777, st.uid], [0o700, process.getuid!()]);
    assert.equal(await healthOver(sock), 200);
  } finally {
    await p.kill('SIGTERM');
  }
  assert.equal(existsSync(folder), false, 'the folder is removed when the agent stops');
});
