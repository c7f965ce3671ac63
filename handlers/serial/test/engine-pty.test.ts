/**
 * The serial engine against a real pseudo-terminal pair (socat) with an instrument played on the far
 * end: every end condition, binary data, cancel and timeout mid-read, the port pool (reuse, settings
 * change, idle close, close on pause), another program holding the port, and the device unplugged
 * mid-call (socat killed) and plugged back in.
 */
import { test, describe, before, after } from 'node:test';
import { until } from '../../../test/helpers/wait.js';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { realBinding } from '../engine/binding.js';
import { SerialFault } from '../engine/faults.js';
import * as ops from '../engine/operations.js';
import { PortPool } from '../engine/pool.js';
import { resolveSettings } from '../engine/settings.js';
import { flooder, Instrument, lineScript, scale, silent, startPtyPair, trickler, type PtyPair, type Script } from '../../../test/peers/serial-pty.js';

const never = new AbortController().signal;

/** Waits for `p` to reject with a SerialFault and returns it. */
async function fault(p: Promise<unknown>): Promise<SerialFault> {
  try {
    await p;
  } catch (e) {
    if (e instanceof SerialFault) return e;
    throw e;
  }
  assert.fail('expected a SerialFault');
}

describe('serial engine on a socat pty pair', () => {
  let pair: PtyPair;
  let pool: PortPool;
  let inst: Instrument | undefined;
  const play = async (script: Script) => {
    await inst?.close();
    inst = await Instrument.open(pair.b, script);
    return inst;
  };
  const target = () => ({ path: pair.a, alias: 'scale' });
  /** Reads until the pair is quiet: a stopped flooder leaves bytes in socat's and the ptys' buffers. */
  const drain = async () => {
    for (;;) {
      const r = await ops.request(pool, target(), { until: { idle_ms: 200, max_ms: 500 }, max_bytes: 1024 * 1024, format: 'base64' }, never);
      if (r.bytes === 0) return;
    }
  };

  before(async () => {
    pair = await startPtyPair();
    pool = new PortPool({ binding: realBinding, idleCloseMs: 60_000 });
  });
  after(async () => {
    await inst?.close();
    await pool.dispose();
    await pair.kill();
    rmSync(pair.dir, { recursive: true, force: true });
  });

  test('the scale answers W\\r\\n with its weight; the read ends at the delimiter; the port is reused', async () => {
    await play(scale());
    const r1 = await ops.request(pool, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } }, never);
    assert.equal(r1.text, '  12.34 kg\r\n');
    assert.equal(r1.ended, 'delimiter');
    assert.equal(r1.written, 3);
    assert.equal(r1.port, 'scale');
    assert.equal(r1.reused_port, false);
    assert.ok(r1.timings.first_byte_ms !== null && r1.timings.first_byte_ms >= 0);
    const r2 = await ops.request(pool, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n', include_delimiter: false } }, never);
    assert.equal(r2.text, '  12.34 kg');
    assert.equal(r2.reused_port, true);
    assert.equal(inst!.received.toString(), 'W\r\nW\r\n');
  });

  test('byte count: the read ends after N bytes and the rest waits for the next read', async () => {
    await play(trickler(['abcdef'], 0));
    const r = await ops.request(pool, target(), { write: { text: 'T\r\n' }, until: { bytes: 4 } }, never);
    assert.deepEqual([r.text, r.ended], ['abcd', 'bytes']);
    const rest = await ops.request(pool, target(), { flush_input: false, until: { bytes: 2, max_ms: 2000 } }, never);
    assert.deepEqual([rest.text, rest.ended], ['ef', 'bytes']);
  });

  test('idle gap: bytes with short gaps are one answer; a long gap ends it', async () => {
    await play(trickler(['12', '34', '56', '78'], 20));
    const r = await ops.request(pool, target(), { write: { text: 'T\r\n' }, until: { idle_ms: 400 } }, never);
    assert.deepEqual([r.text, r.ended], ['12345678', 'idle']);
    await play(trickler(['first', 'second'], 1500));
    const r2 = await ops.request(pool, target(), { write: { text: 'T\r\n' }, until: { idle_ms: 300, max_ms: 5000 } }, never);
    assert.deepEqual([r2.text, r2.ended], ['first', 'idle']);
  });

  test('regex on the text: the read ends at the match and reports it', async () => {
    await play(trickler(['booting...\r\n', 'STATUS ', 'OK 42', '\r\nmore'], 10));
    const r = await ops.request(pool, target(), { write: { text: 'T\r\n' }, until: { regex: 'OK (\\d+)', max_ms: 3000 } }, never);
    assert.equal(r.ended, 'regex');
    assert.equal(r.match, 'OK 42');
    assert.equal(r.text, 'booting...\r\nSTATUS OK 42');
  });

  test('time limit: a silent device ends the read with ended: time and no bytes', async () => {
    await play(silent);
    const r = await ops.request(pool, target(), { write: { text: 'hello?\r\n' }, until: { delimiter: '\n', max_ms: 300 } }, never);
    assert.deepEqual([r.ended, r.bytes, r.timings.first_byte_ms], ['time', 0, null]);
    assert.ok(r.timings.read_ms >= 290, String(r.timings.read_ms));
  });

  test('size limit: a flooder ends the read at max_bytes, and at the 1 MiB cap', async () => {
    const f = flooder();
    await play(f);
    try {
      const r = await ops.request(pool, target(), { write: { text: 'F\r\n' }, until: { delimiter: 'never', max_ms: 20_000 }, max_bytes: 10_000, format: 'base64' }, never);
      assert.deepEqual([r.ended, r.bytes], ['limit', 10_000]);
      const big = await ops.request(pool, target(), { until: { idle_ms: 5000, max_ms: 60_000 }, max_bytes: 1024 * 1024, format: 'base64' }, never);
      assert.deepEqual([big.ended, big.bytes], ['limit', 1024 * 1024]);
      assert.ok(Buffer.from(big.base64!, 'base64').every((b) => b === 0x46));
    } finally {
      f.stop();
      await drain();
    }
  });

  test('binary with NULs goes out and comes back byte for byte (hex in, base64 out, hex delimiter)', async () => {
    // An echo device that answers after ETX.
    await play((chunk, w, all) => (all.includes(0x03) ? void w.send(Buffer.concat([Buffer.from([0x02, 0x00]), all, Buffer.from([0x00, 0x04])])) : undefined));
    const r = await ops.request(pool, target(), { write: { hex: '00 01 ff:00 03' }, until: { delimiter_hex: '0004' }, format: 'both' }, never);
    assert.equal(r.ended, 'delimiter');
    assert.deepEqual([...Buffer.from(r.base64!, 'base64')], [0x02, 0x00, 0x00, 0x01, 0xff, 0x00, 0x03, 0x00, 0x04]);
    assert.equal(r.text!.length > 0, true);
    assert.deepEqual([...inst!.received], [0x00, 0x01, 0xff, 0x00, 0x03]);
  });

  test('cancel mid-read stops at once; the port stays open and the next call works', async () => {
    await play(lineScript((line, w) => (line === 'W' ? void w.send('  12.34 kg\r\n') : undefined)));
    const ac = new AbortController();
    const pending = ops.request(pool, target(), { write: { text: 'wait\r\n' }, until: { delimiter: '\n', max_ms: 60_000 } }, ac.signal);
    await inst!.receivedAtLeast(6);
    const t0 = performance.now();
    ac.abort(new Error('cancelled by test'));
    await assert.rejects(pending, /cancelled by test/);
    assert.ok(performance.now() - t0 < 200, 'the read stopped at once');
    const next = await ops.request(pool, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } }, never);
    assert.equal(next.text, '  12.34 kg\r\n');
    assert.equal(next.reused_port, true);
  });

  test('timeout (the signal fires with a timeout reason) behaves the same: stopped, port usable', async () => {
    await play(scale());
    const pending = ops.request(pool, target(), { until: { delimiter: '\n', max_ms: 60_000 } }, AbortSignal.timeout(150));
    await assert.rejects(pending, (e: Error) => e.name === 'TimeoutError');
    const next = await ops.request(pool, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } }, never);
    assert.deepEqual([next.text, next.reused_port], ['  12.34 kg\r\n', true]);
  });

  test('bad arguments are refused before the port is touched', async () => {
    await play(silent);
    const before = inst!.received.length;
    for (const a of [{ write: { text: 'x', hex: '00' } }, { write: { hex: 'zz' } }, { until: { regex: '(' } }, { until: { delimiter: 'a', delimiter_hex: '00' } }, { until: { bytes: 10 }, max_bytes: 5 }]) {
      const f = await fault(ops.request(pool, target(), a as ops.RequestArgs, never));
      assert.equal(f.type, 'invalid_arguments', JSON.stringify(a));
    }
    assert.equal(inst!.received.length, before);
  });

  test('settings change reopens the port; idle ports are closed; closeAll (pause) ends a read in progress', async () => {
    await play(scale());
    await pool.closeAll(); // one open per port: this test uses its own pool
    const p2 = new PortPool({ binding: realBinding, idleCloseMs: 100 });
    const a = await ops.request(p2, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } }, never);
    const b = await ops.request(p2, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n' }, settings: { baud: 19200 } }, never);
    assert.deepEqual([a.reused_port, b.reused_port], [false, false]);
    assert.deepEqual(p2.openPaths(), [pair.a]);
    await new Promise<void>((resolve) => {
      const t = setInterval(() => p2.openPaths().length === 0 && (clearInterval(t), resolve()), 20);
    });
    const reading = ops.request(p2, target(), { until: { delimiter: '\n', max_ms: 60_000 } }, never);
    const failed = fault(reading);
    // The read has started once its port is open in the pool: closing all then closes it under the call.
    await until(() => p2.openPaths().includes(pair.a), 10_000, 'the port open in the pool', 0);
    await p2.closeAll();
    const f = await failed;
    assert.equal(f.type, 'device_unavailable');
    await p2.dispose();
  });

  test('a call that gives up waiting for the port does not close it under the call that has it', async () => {
    await play(scale());
    await pool.closeAll();
    const p2 = new PortPool({ binding: realBinding, idleCloseMs: 50 });
    const holder = await p2.acquire(pair.a, resolveSettings(undefined, undefined), never);
    const ac = new AbortController();
    const waiting = p2.acquire(pair.a, resolveSettings(undefined, undefined), ac.signal);
    ac.abort(new Error('gave up'));
    await assert.rejects(waiting, /gave up/);
    // A "nothing happens within 200 ms" check, and only time can show it: the idle close is a timer of
    // 50 ms, so had the waiter's give-up started it, it would have closed the holder's port four times over.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(holder.link.usable, true);
    holder.release();
    await p2.dispose();
  });

  test('modem lines: a pty has none, which is a typed error, and the port stays usable', async () => {
    await play(scale());
    const g = await fault(ops.getSignals(pool, target(), {}, never));
    assert.deepEqual([g.type, g.reason], ['execution_failed', 'not_supported']);
    const s = await fault(ops.setSignals(pool, target(), { dtr: false }, never));
    assert.deepEqual([s.type, s.reason], ['execution_failed', 'not_supported']);
    const r = await ops.request(pool, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } }, never);
    assert.deepEqual([r.text, r.reused_port], ['  12.34 kg\r\n', true]);
  });

  test('monitor records lines with times, reports progress, and counts overflow', async () => {
    await play(trickler(['line one\r\n', 'line two\r\n', 'line three\r\n'], 150));
    const seen: string[] = [];
    await ops.write(pool, target(), { data: { text: 'T\r\n' } }, never);
    const rec = await ops.monitor(pool, target(), { duration_ms: 1200 }, never, (p) => seen.push(`${p.lineCount}:${p.lastLine ?? ''}`));
    assert.deepEqual(rec.lines!.map((l) => l.text), ['line one', 'line two', 'line three']);
    assert.ok(rec.lines!.every((l, i, a) => i === 0 || l.t_ms >= a[i - 1]!.t_ms));
    assert.ok(seen.length >= 2 && seen.at(-1) === '3:line three', seen.join(' | '));
    const f = flooder();
    await play(f);
    try {
      await ops.write(pool, target(), { data: { text: 'F\r\n' } }, never);
      const m = await ops.monitor(pool, target(), { duration_ms: 800, max_bytes: 5000, format: 'base64' }, never, () => {});
      assert.equal(m.kept_bytes, 5000);
      assert.equal(Buffer.from(m.base64!, 'base64').length, 5000);
      assert.ok(m.overflow_bytes > 0 && m.bytes === m.kept_bytes + m.overflow_bytes, JSON.stringify({ ...m, base64: undefined }));
    } finally {
      f.stop();
      await drain();
    }
  });

  test('another program holding the port: device_busy, retryable; free again after it lets go', async () => {
    await play(scale());
    await pool.closeAll();
    // util-linux flock takes the same flock(2) lock that serialport's open takes.
    // --no-fork: flock becomes the shell and then sleep, so one process holds the lock and its exit frees it.
    const holder = spawn('flock', ['--no-fork', '-x', pair.a, '-c', 'echo locked; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    await new Promise<void>((r) => holder.stdout!.once('data', () => r()));
    try {
      const f = await fault(ops.request(pool, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } }, never));
      assert.deepEqual([f.type, f.reason, f.retryable], ['device_busy', 'held_by_other_program', true]);
    } finally {
      const gone = new Promise((r) => holder.once('exit', r));
      holder.kill('SIGKILL');
      await gone;
    }
    const r = await ops.request(pool, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } }, never);
    assert.equal(r.text, '  12.34 kg\r\n');
  });

  test('a missing port is device_unavailable (unplugged)', async () => {
    const f = await fault(ops.request(pool, { path: pair.dir + '/nope' }, { until: { idle_ms: 10 } }, never));
    assert.deepEqual([f.type, f.reason, f.retryable], ['device_unavailable', 'unplugged', true]);
  });

  test('unplugged mid-call (socat killed): device_unavailable; after it is back the next call works', async () => {
    await play(silent);
    const pending = fault(ops.request(pool, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\n', max_ms: 60_000 } }, never));
    await inst!.receivedAtLeast(3);
    await pair.kill('SIGKILL');
    const f = await pending;
    assert.deepEqual([f.type, f.reason], ['device_unavailable', 'unplugged']);
    await inst!.close();
    inst = undefined;
    pair = await startPtyPair(pair.dir);
    await play(scale());
    const r = await ops.request(pool, target(), { write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } }, never);
    assert.deepEqual([r.text, r.reused_port], ['  12.34 kg\r\n', false]);
  });
});
