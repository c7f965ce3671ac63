/**
 * `npm start` (the demo) fails as a whole when its agent cannot start (issue 13, Low 11): the bridge is
 * stopped, the reason is printed and the exit code says so; and each demo folder has its own socket, so
 * two demos side by side both start.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { cli, cliRun, tempDir, until } from '../helpers/stack.js';
import { freePort } from '../helpers/net.js';


test('an agent that cannot start stops the demo: non-zero exit, the reason, the port free again', async () => {
  const dir = join(tempDir(), 'demo');
  // The agent's data folder exists first, readable by others and not made by the program: the agent refuses it.
  mkdirSync(join(dir, 'agent-data'), { recursive: true, mode: 0o755 });
  chmodSync(join(dir, 'agent-data'), 0o755);
  const port = await freePort();
  const r = await cliRun(['demo', '--dir', dir, '--port', String(port)]);
  assert.notEqual(r.code, 0, 'the demo must not stay up with only its bridge');
  assert.match(r.err + r.out, /agent could not start.*can be read by other users/s);
  const srv = createServer();
  await new Promise<void>((res, rej) => {
    srv.once('error', rej);
    srv.listen(port, '127.0.0.1', res);
  });
  srv.close();
});

test('two demos in two folders have their own sockets and both run', { skip: process.platform === 'win32' }, async () => {
  const a = cli(['demo', '--dir', join(tempDir(), 'd1'), '--port', String(await freePort())]);
  const b = cli(['demo', '--dir', join(tempDir(), 'd2'), '--port', String(await freePort())]);
  try {
    await until(() => a.out.includes('Ctrl-C stops both') && b.out.includes('Ctrl-C stops both'), 90_000, 'both demo banners');
  } finally {
    a.child.kill('SIGINT');
    b.child.kill('SIGINT');
    await Promise.all([a.exited, b.exited]);
  }
});
