/**
 * Issue 27, finding 1: a `*` serial grant covers only ports the OS lists as serial ports. Through the
 * CLI-started bridge and agent: under `*` a socat pty, /dev/tty, /dev/console, a regular file, a symlink
 * to one, a FIFO and a block device are refused (`rejected/permission_denied`, `details.rule`) by every serial function, before consent,
 * and never opened (the agent's /proc/<pid>/fd never shows them; the FIFO's writer never sees a reader);
 * an absent path reads the same as a regular file (no oracle); an explicit grant of a pty works; an
 * explicit grant of a regular file is refused.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, constants, existsSync, mkdtempSync, openSync, readdirSync, readlinkSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Proc, processStack, until } from '../helpers/stack.js';
import { Instrument, scale, startPtyPair, type PtyPair } from '../peers/serial-pty.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

/** Every path the process has open now. */
function openPaths(pid: number): string[] {
  const out: string[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      out.push(readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      /* closed meanwhile */
    }
  }
  return out;
}

/** Samples the process's open files, back to back, until `stop()`: every path seen. */
function watchFds(pid: number): { stop(): Promise<Set<string>> } {
  const seen = new Set<string>();
  let on = true;
  const loop = (async () => {
    while (on) {
      for (const p of openPaths(pid)) seen.add(p);
      await new Promise((r) => setImmediate(r));
    }
  })();
  return {
    async stop() {
      on = false;
      await loop;
      return seen;
    },
  };
}

describe('serial grants: only serial ports under *, only terminals when named', () => {
  let s: Stack;
  let star: PtyPair;
  let named: PtyPair;
  let dir: string;
  let file: string;
  let link: string;
  let fifo: string;
  let writer: Proc;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'aios-serial-paths-'));
    file = join(dir, 'notes.txt');
    writeFileSync(file, 'private\n');
    link = join(dir, 'ttyUSB0');
    symlinkSync(file, link);
    fifo = join(dir, 'fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    // Blocks in open(2) until someone opens the FIFO for reading; then says so.
    writer = new Proc(spawn('sh', ['-c', 'exec 3>"$0"; echo opened', fifo], { stdio: ['ignore', 'pipe', 'pipe'] }));
    star = await startPtyPair();
    named = await startPtyPair();
    s = await processStack({
      agent: {
        grants: { serial: ['*', { path: named.a, alias: 'meter', baud: 9600 }, { path: join(dir, 'notes.txt'), alias: 'notes' }] },
        policy: { 'serial.write': 'allow', 'serial.set_signals': 'allow' },
        confirmations: { provider: 'none' },
      },
    });
  });
  after(async () => {
    await s?.stop();
    await star?.kill();
    await named?.kill();
    if (writer.child.exitCode === null) await writer.kill('SIGKILL');
    for (const d of [star?.dir, named?.dir, dir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  const outcome = async (fn: string, args: Record<string, unknown>) => (await s.client.call(fn, args)).record.outcome!;
  const calls = (port: string): [string, Record<string, unknown>][] => [
    ['serial.request', { port, write: { text: 'W\r\n' }, until: { delimiter: '\r\n', max_ms: 2000 } }],
    ['serial.write', { port, data: { text: 'x' } }],
    ['serial.set_signals', { port, dtr: true }],
    ['serial.get_signals', { port }],
    ['serial.monitor', { port, duration_ms: 1000 }],
  ];

  test('under *: a pty, /dev/tty, /dev/console, a regular file, a symlink to one, a FIFO and a block device are refused by every function and never opened', async () => {
    const pid = s.agent.child.pid!;
    const watch = watchFds(pid);
    const refused: string[] = [];
    // A block device, where this machine has one (containers may not).
    const block = ['/dev/loop0', '/dev/vda', '/dev/sda'].find((p) => existsSync(p) && statSync(p).isBlockDevice());
    const ports = [star.a, '/dev/tty', '/dev/console', '/dev/null', link, fifo, ...(block ? [block] : [])];
    for (const port of ports) {
      for (const [fn, args] of calls(port)) {
        const o = await outcome(fn, args);
        assert.deepEqual([o.state, o.error?.type, o.error?.side_effects, o.error?.details?.['rule']], ['rejected', 'permission_denied', 'none', 'not_a_listed_port'], `${fn} ${port}: ${JSON.stringify(o.error)}`);
        assert.equal(o.confirmation, undefined, 'refused before consent');
        refused.push(port);
      }
    }
    const seen = await watch.stop();
    // (/dev/null is the agent's own stdin, so it is refused above but not looked for here.)
    const forbidden = [realpathSync(star.a), '/dev/tty', '/dev/console', file, fifo, ...(block ? [block] : [])];
    assert.deepEqual([...seen].filter((p) => forbidden.includes(p)), [], 'the agent never had them open');
    assert.equal(refused.length, ports.length * 5);
    assert.equal(writer.out, '', "the FIFO's writer never saw a reader");
    // The writer would have seen one: opening the FIFO for reading here wakes it.
    const fd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      await until(() => writer.out.includes('opened'), 10_000, 'the FIFO writer sees a reader');
    } finally {
      closeSync(fd);
    }
  });

  test('under *: an absent path and a regular file read the same (no exists/does-not-exist oracle)', async () => {
    const absent = await outcome('serial.get_signals', { port: join(dir, 'nothing-here') });
    const regular = await outcome('serial.get_signals', { port: link });
    const shape = (o: typeof absent, p: string) => [o.state, o.error?.type, o.error?.details?.['rule'], o.error?.message.replace(p, '<path>')];
    assert.deepEqual(shape(absent, join(dir, 'nothing-here')), shape(regular, link));
  });

  test('an explicit grant of a pty works', async () => {
    const inst = await Instrument.open(named.b, scale());
    try {
      const o = await outcome('serial.request', { port: 'meter', write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } });
      assert.equal(o.state, 'completed', JSON.stringify(o.error));
      assert.equal((o.output as { text: string }).text, '  12.34 kg\r\n');
    } finally {
      await inst.close();
    }
  });

  test('an explicit grant of a regular file is refused, naming the rule, and the file is unchanged', async () => {
    const o = await outcome('serial.write', { port: 'notes', data: { text: 'overwritten' } });
    assert.deepEqual([o.state, o.error?.type, o.error?.details?.['rule']], ['rejected', 'permission_denied', 'not_a_character_device']);
    assert.match(o.error!.message, /regular file/);
  });
});
