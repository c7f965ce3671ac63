/**
 * The one-command start: `aios-device demo` (what `npm start` runs) brings up a bridge and an agent with
 * generated tokens and a shared folder, and the `invoke` line it prints works.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { readFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { CLI, ROOT, cli, cliRun, tempDir, until } from '../helpers/stack.js';
import { freePort } from '../helpers/net.js';
import { slow } from '../helpers/wait.js';


test('demo starts both, prints what to run, and the printed invoke works; Ctrl-C stops cleanly', async () => {
  const dir = tempDir();
  const port = await freePort();
  const demo = cli(['demo', '--dir', join(dir, 'demo'), '--port', String(port)]);
  try {
    await until(() => demo.out.includes('Ctrl-C stops both'), 60_000, 'demo banner');
    assert.match(demo.out, /invoke device\.info/);
    // How to grant a serial port, with the config file to edit.
    assert.match(demo.out, /none is granted[\s\S]*agent\.yaml[\s\S]*grants:\n\s+serial:\n\s+- \{ path: \/dev\/ttyUSB0, alias: scale, baud: 9600 \}/);
    const profile = join(dir, 'demo', 'runtime.json');
    assert.match(demo.out, new RegExp(`--runtime ${profile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    const r = await cliRun(['invoke', 'device.info', '--call-id', 'same-demo', '--runtime', profile]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /✓ completed device\.info/);
    assert.doesNotMatch(r.out, /replayed/);
    const read = await cliRun(['invoke', 'files.read_text', '--args', '{"root":"Demo","path":"hello.txt"}', '--runtime', profile]);
    assert.equal(read.code, 0, read.out + read.err);
    assert.match(read.out, /Hello from the AIOS Device demo folder/);
  } finally {
    demo.child.kill('SIGINT');
    assert.equal(await demo.exited, 0);
  }
  // A second start on another port reuses the kept demo (tokens, history) on the new port.
  const port2 = await freePort();
  const again = cli(['demo', '--dir', join(dir, 'demo'), '--port', String(port2)]);
  try {
    await until(() => again.out.includes('Ctrl-C stops both'), 60_000, 'second demo banner');
    assert.match(again.out, new RegExp(`127\\.0\\.0\\.1:${port2}`));
    const r = await cliRun(['invoke', 'device.info', '--call-id', 'same-demo', '--runtime', join(dir, 'demo', 'runtime.json')]);
    assert.equal(r.code, 0, r.err);
    // The same tokens and history: the call made in the first run is answered from its record.
    assert.match(r.out, /replayed: this call_id already ran/);
  } finally {
    again.child.kill('SIGINT');
    assert.equal(await again.exited, 0);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('in a terminal the demo asks before a write: the prompt names the requester and the file; "a" allows it', async () => {
  const dir = tempDir();
  const port = await freePort();
  const sock = join(dir, 'tmux.sock');
  const tmux = (...a: string[]) => execFileSync('tmux', ['-S', sock, '-f', '/dev/null', ...a], { encoding: 'utf8' });
  const cmd = `${process.execPath} --import tsx ${CLI} demo --dir ${join(dir, 'demo')} --port ${port}`;
  tmux('new-session', '-d', '-s', 'demo', '-x', '160', '-y', '45', '-c', ROOT, cmd);
  try {
    const screen = () => tmux('capture-pane', '-p', '-t', 'demo');
    await until(() => screen().includes('Ctrl-C stops both'), 60_000, 'demo banner');
    const profile = join(dir, 'demo', 'runtime.json');
    const write = cliRun(['invoke', 'files.write_text', '--args', '{"root":"Demo","path":"note.txt","text":"hi"}', '--requester', 'Tour guide', '--runtime', profile]);
    await until(() => /Time left: \d+ s/.test(screen()), 20_000, 'the prompt');
    const s = screen();
    assert.match(s, /demo runtime \(says it is "Tour guide"\) in workspace ws_demo asks to:/);
    assert.match(s, /Create note\.txt in Demo \(2 bytes\)/);
    tmux('send-keys', '-t', 'demo', 'a');
    const r = await write;
    assert.equal(r.code, 0, r.out + r.err);
    assert.equal(readFileSync(join(dir, 'demo', 'shared', 'note.txt'), 'utf8'), 'hi');
  } finally {
    try {
      tmux('send-keys', '-t', 'demo', 'C-c');
      await new Promise((r) => setTimeout(r, 500));
      tmux('kill-server');
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`npm start` runs the compiled build: the demo starts from dist/ and a call through it completes', { timeout: slow(240_000) }, async () => {
  // What `npm start` does: build, then run <build>/agent/main.js demo, the bundle (no tsx anywhere). The build goes
  // to a folder of its own under the project (node_modules is found from there), not into the checkout's
  // dist/, which other tests running alongside or the developer may be using.
  const out = join(ROOT, `.test-tmp-build-${process.pid}`);
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json'), '--outDir', out], { cwd: ROOT, stdio: 'inherit' });
  const dir = tempDir();
  const port = await freePort();
  const { spawn } = await import('node:child_process');
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-agent-bundle.mjs'), '--dist', out], { cwd: ROOT, stdio: 'inherit' });
  const compiled = join(out, 'agent', 'main.js');
  const child = spawn(process.execPath, [compiled, 'demo', '--dir', join(dir, 'demo'), '--port', String(port)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  try {
    await until(() => log.includes('Ctrl-C stops both'), 60_000, 'compiled demo banner');
    const r = spawn(process.execPath, [compiled, 'invoke', 'device.info', '--runtime', join(dir, 'demo', 'runtime.json')], { cwd: ROOT });
    let rout = '';
    r.stdout.on('data', (d: Buffer) => (rout += d.toString()));
    const code = await new Promise<number | null>((res) => r.on('exit', (c) => res(c)));
    assert.equal(code, 0, rout);
    assert.match(rout, /✓ completed device\.info/);
  } finally {
    child.kill('SIGINT');
    const code = await exited;
    rmSync(dir, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
    assert.equal(code, 0, log);
  }
});

test('a demo port already in use is said plainly, with the option to pick another', async () => {
  const dir = tempDir();
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  const port = (busy.address() as { port: number }).port;
  try {
    const r = await cliRun(['demo', '--dir', join(dir, 'demo'), '--port', String(port)]);
    assert.notEqual(r.code, 0);
    assert.match(r.err, new RegExp(`port ${port} is already in use; start the demo with --port`));
  } finally {
    busy.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
