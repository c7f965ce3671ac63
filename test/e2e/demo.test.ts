/**
 * The one-command start: `aios-device demo` (what `npm start` runs) brings up a bridge and an agent with
 * generated tokens and a shared folder, and the `invoke` line it prints works.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { cli, cliRun, tempDir, until } from '../helpers/stack.js';

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

test('demo starts both, prints what to run, and the printed invoke works; Ctrl-C stops cleanly', async () => {
  const dir = tempDir();
  const port = await freePort();
  const demo = cli(['demo', '--dir', join(dir, 'demo'), '--port', String(port)]);
  try {
    await until(() => demo.out.includes('Ctrl-C stops both'), 60_000, 'demo banner');
    assert.match(demo.out, /invoke device\.info/);
    const profile = join(dir, 'demo', 'runtime.json');
    assert.match(demo.out, new RegExp(`--runtime ${profile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    const r = await cliRun(['invoke', 'device.info', '--runtime', profile]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /✓ completed device\.info/);
    const read = await cliRun(['invoke', 'files.read_text', '--args', '{"root":"Demo","path":"hello.txt"}', '--runtime', profile]);
    assert.equal(read.code, 0, read.out + read.err);
    assert.match(read.out, /Hello from the AIOS Device demo folder/);
  } finally {
    demo.child.kill('SIGINT');
    assert.equal(await demo.exited, 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
