/**
 * serial.* through the CLI-started bridge and agent, against a real socat pty pair with an instrument
 * played by this test: the scale's answer, the port listing, an ungranted port, two concurrent calls
 * serialised by the port's lock, cancel and timeout mid-read (the port stays usable), the instrument
 * unplugged mid-call and plugged back, no device data in the agent's log or data folder, and the OS
 * refusing the port to an agent run without privileges (setpriv: every capability dropped, no groups).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, Proc, processStack, ROOT, until } from '../helpers/stack.js';
import { Instrument, lineScript, scale, silent, startPtyPair, type PtyPair, type Script } from '../peers/serial-pty.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

/** The dialout group's id (20 on Debian and Ubuntu when /etc/group does not name it). */
function dialoutGid(): number {
  const m = /^dialout:[^:]*:(\d+):/m.exec(readFileSync('/etc/group', 'utf8'));
  return m ? Number(m[1]) : 20;
}

/** Every file under `dir` but the call journal, as bytes. */
function allBytesButJournal(dir: string): Buffer {
  const out: Buffer[] = [];
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    // The journal keeps each outcome so that a re-sent call_id is answered without running again (PROTOCOL.md §5).
    if (e.isFile() && !e.name.startsWith('journal.')) out.push(readFileSync(join(e.parentPath, e.name)));
  }
  return Buffer.concat(out);
}

describe('serial.* through the CLI-started bridge and agent', () => {
  let s: Stack;
  let pair: PtyPair;
  let inst: Instrument | undefined;
  const play = async (script: Script) => {
    await inst?.close();
    inst = await Instrument.open(pair.b, script);
    return inst;
  };
  const ask = (args: Record<string, unknown> = {}, opts: Parameters<Stack['client']['call']>[2] = {}) =>
    s.client.call('serial.request', { port: 'scale', write: { text: 'W\r\n' }, until: { delimiter: '\r\n' }, ...args }, opts);

  before(async () => {
    pair = await startPtyPair();
    s = await processStack({ agent: { grants: { serial: [{ path: pair.a, alias: 'scale', baud: 9600 }, { path: join(pair.dir, 'plc'), alias: 'plc', ask: 'always' }] }, policy: { 'serial.write': 'allow' }, confirmations: { provider: 'none' }, handlers: { serial: { idle_close_ms: 60_000 } } } });
  });
  after(async () => {
    await inst?.close();
    await s.stop();
    await pair.kill();
    rmSync(pair.dir, { recursive: true, force: true });
  });

  test('the scale answers through the whole path; the second call reuses the open port', async () => {
    await play(scale());
    const o = (await ask()).record.outcome!;
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    const out = o.output as { text: string; ended: string; port: string; reused_port: boolean };
    assert.deepEqual([out.text, out.ended, out.port], ['  12.34 kg\r\n', 'delimiter', 'scale']);
    // The port by its path is the same grant.
    const byPath = (await ask({ port: pair.a })).record.outcome!;
    assert.deepEqual([byPath.state, (byPath.output as { port: string }).port], ['completed', 'scale']);
    const again = (await ask()).record.outcome!.output as { reused_port: boolean };
    assert.equal(again.reused_port, true);
  });

  test('list_ports: the granted ports first (ptys are not listed by the OS), then the OS ports by path only, never opened', async () => {
    const o = (await s.client.call('serial.list_ports', {})).record.outcome!;
    assert.equal(o.state, 'completed');
    const ports = (o.output as { ports: { path: string; granted: boolean; listed: boolean; serial_number?: string }[] }).ports;
    assert.deepEqual(ports[0], { path: pair.a, granted: true, alias: 'scale', listed: false });
    assert.deepEqual(ports[1], { path: join(pair.dir, 'plc'), granted: true, alias: 'plc', listed: false });
    // This machine's real UARTs (udevadm lists them) come after them, named only.
    for (const p of ports.slice(2)) assert.deepEqual(Object.keys(p).sort(), ['granted', 'listed', 'path']);
  });

  test('an ungranted port is rejected with permission_denied before consent; nothing is opened', async () => {
    const o = (await s.client.call('serial.request', { port: '/dev/ttyS0', until: { idle_ms: 10 } })).record.outcome!;
    assert.deepEqual([o.state, o.error?.type, o.error?.side_effects], ['rejected', 'permission_denied', 'none']);
    assert.match(o.error!.message, /grants\.serial/);
  });

  test('ask: always makes even a low call on that port ask; with nobody to ask it is refused and nothing is opened', async () => {
    const o = (await s.client.call('serial.get_signals', { port: 'plc' })).record.outcome!;
    assert.deepEqual([o.state, o.error?.type], ['rejected', 'confirmation_unavailable']);
  });

  test('two concurrent calls on one port run one after the other (lock serial:<path>)', async () => {
    // A slow answer to A and a fast one to B: interleaved, A's read would get B's answer.
    await play(lineScript((line, w) => (line === 'A' ? void setTimeout(() => void w.send('slow-a\r\n'), 400) : line === 'B' ? void w.send('fast-b\r\n') : undefined)));
    const [a, b] = await Promise.all([ask({ write: { text: 'A\r\n' } }), ask({ write: { text: 'B\r\n' } })]);
    const ta = a.record.outcome!;
    const tb = b.record.outcome!;
    assert.equal((ta.output as { text: string }).text, 'slow-a\r\n');
    assert.equal((tb.output as { text: string }).text, 'fast-b\r\n');
    const [first, second] = Date.parse(ta.started_at!) <= Date.parse(tb.started_at!) ? [ta, tb] : [tb, ta];
    assert.ok(Date.parse(second.started_at!) >= Date.parse(first.finished_at!), 'the second started after the first ended');
  });

  test('cancel mid-read ends the call at once; the next call on the port works', async () => {
    await play(silent);
    const started = await ask({ until: { delimiter: '\n', max_ms: 60_000 } }, { wait: false, timeout_ms: 60_000 });
    await inst!.receivedAtLeast(3);
    await s.client.cancel(started.record.call_id);
    const done = await s.client.waitTerminal(started.record.call_id, 10_000);
    assert.equal(done.outcome?.state, 'cancelled');
    await play(scale());
    const next = (await ask()).record.outcome!;
    assert.deepEqual([next.state, (next.output as { text: string }).text], ['completed', '  12.34 kg\r\n']);
  });

  test('timeout mid-read: failed/timeout; the next call on the port works', async () => {
    await play(silent);
    const o = (await ask({ until: { delimiter: '\n', max_ms: 60_000 } }, { timeout_ms: 700 })).record.outcome!;
    assert.deepEqual([o.state, o.error?.type], ['failed', 'timeout']);
    await play(scale());
    const next = (await ask()).record.outcome!;
    assert.deepEqual([next.state, (next.output as { reused_port: boolean }).reused_port], ['completed', true]);
  });

  test('serial.write reaches the device (allowed by the administrator)', async () => {
    await play(silent);
    const o = (await s.client.call('serial.write', { port: 'scale', data: { hex: '1b 40 00 ff' } })).record.outcome!;
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    await inst!.receivedAtLeast(4);
    assert.deepEqual([...inst!.received], [0x1b, 0x40, 0x00, 0xff]);
  });

  test('unplugged mid-call (socat killed): device_unavailable/unplugged; after it is back the next call works', async () => {
    await play(silent);
    const started = await ask({ until: { delimiter: '\n', max_ms: 60_000 } }, { wait: false, timeout_ms: 60_000 });
    await inst!.receivedAtLeast(3);
    await pair.kill('SIGKILL');
    const done = await s.client.waitTerminal(started.record.call_id, 20_000);
    assert.deepEqual([done.outcome?.state, done.outcome?.error?.type, done.outcome?.error?.details?.['reason'], done.outcome?.error?.retryable], ['failed', 'device_unavailable', 'unplugged', true]);
    await inst!.close();
    inst = undefined;
    pair = await startPtyPair(pair.dir);
    await play(scale());
    const next = (await ask()).record.outcome!;
    assert.deepEqual([next.state, (next.output as { text: string }).text], ['completed', '  12.34 kg\r\n']);
  });

  test('monitor: progress reaches the runtime (at most 10 a second) with the latest line; the outcome holds every line', async () => {
    await play(silent);
    const lines = Array.from({ length: 12 }, (_, i) => `code-${i}`);
    const started = await s.client.call('serial.monitor', { port: 'scale', duration_ms: 2000 }, { wait: false, timeout_ms: 10_000 });
    const id = started.record.call_id;
    // The runtime's event stream (SSE) of the call, read until its outcome; the device starts sending once the call runs.
    const res = await fetch(`${s.url}/v1/calls/${id}/events`, { headers: { authorization: `Bearer ${s.tokens.runtime}` } });
    assert.equal(res.status, 200);
    let text = '';
    let sending: Promise<void> | undefined;
    const decoder = new TextDecoder();
    for await (const chunk of res.body!) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      if (!sending && /"state":"running"/.test(text)) {
        sending = (async () => {
          for (const l of lines) {
            await inst!.send(`${l}\r\n`);
            await new Promise((r) => setTimeout(r, 60)); // the scanner's pace, not a wait for the code under test
          }
        })();
      }
    }
    await sending;
    const progress = [...text.matchAll(/^event: progress\ndata: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as { message?: string; total?: number });
    const done = await s.client.getCall(id);
    assert.equal(done.outcome!.state, 'completed', JSON.stringify(done.outcome!.error));
    const out = done.outcome!.output as { lines: { text: string }[]; line_count: number };
    assert.deepEqual(out.lines.map((l) => l.text), lines);
    assert.ok(progress.length >= 2 && progress.length <= 21, `${progress.length} progress notes in 2 s`);
    assert.ok(progress.every((p) => p.total === 2000));
    assert.match(progress.at(-1)!.message!, /^12 lines, \d+ bytes; last: code-11$/);
  });

  test('nothing read or written is in the agent log or the audit trail (consent.sqlite and the rest of the data folder)', async () => {
    await until(() => s.agentLog().includes('serial'), 10_000, 'serial calls in the agent log');
    const text = s.agentLog() + allBytesButJournal(join(s.dir, 'agent')).toString('latin1');
    for (const secret of ['12.34 kg', 'slow-a', 'fast-b', 'code-11']) assert.ok(!text.includes(secret), `"${secret}" leaked`);
    // The hex written above, as bytes or as its hex text.
    assert.ok(!text.includes('1b 40 00 ff') && !text.includes('\x1b\x40\x00\xff'));
  });

  test('the OS refusing the port (the agent without privileges, not in the port\'s group): permission_denied with the fix', async () => {
    await s.agent.kill('SIGTERM');
    await s.online(false);
    // The port as a USB serial adapter's node is to an ordinary user: crw-rw---- of another owner and the
    // dialout group. The agent keeps uid 0 so that it can still read this checkout wherever it was cloned
    // (uid 65534 could not read a clone in a 0700 temp folder, as CI makes, and died at start), but with
    // every capability dropped root is held to the file modes like any user, and it is in no group.
    const tty = realpathSync(pair.a);
    chownSync(tty, 65534, dialoutGid());
    chmodSync(tty, 0o660);
    s.agent = new Proc(
      spawn('setpriv', ['--bounding-set=-all', '--inh-caps=-all', '--clear-groups', '--', process.execPath, '--import', 'tsx', CLI, 'run', '--config', s.agentConfig], {
        cwd: ROOT,
        env: process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    await s.online(true);
    // The premise: no capability that would let it open the port regardless of its mode.
    assert.match(readFileSync(`/proc/${s.agent.child.pid}/status`, 'utf8'), /^CapEff:\s*0+$/m);
    const o = (await ask()).record.outcome!;
    assert.deepEqual([o.state, o.error?.type, o.error?.details?.['reason']], ['failed', 'permission_denied', 'os_refused'], JSON.stringify(o) + s.agent.err);
    assert.match(o.error!.message, /dialout/);
  });
});
