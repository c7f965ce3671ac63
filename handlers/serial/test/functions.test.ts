/**
 * The serial functions inside the kit's test host (the real dispatcher, registry, journal and grant
 * store) on a real socat pty pair: ports by alias, prompt sentences from the catalogues (en, zh-CN),
 * refusals before consent (ungranted port, bad arguments: no prompt), cancel and timeout, live grants,
 * and the lifecycle: pause and shutdown release the port (another program can lock it again).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import handler from '../index.js';
import { createTestHost, type TestHost } from '../../../src/kit/testing.js';
import { Instrument, scale, silent, startPtyPair, type PtyPair, type Script } from '../../../test/peers/serial-pty.js';

/** True when another program could take the port's lock now (flock(1), non-blocking). */
const lockable = (path: string) => spawnSync('flock', ['-n', '-x', path, 'true']).status === 0;

describe('serial functions in the kit test host', () => {
  let pair: PtyPair;
  let host: TestHost;
  let inst: Instrument | undefined;
  const play = async (s: Script) => {
    await inst?.close();
    inst = await Instrument.open(pair.b, s);
  };
  const weigh = { port: 'scale', write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } };

  before(async () => {
    pair = await startPtyPair();
    host = await createTestHost(handler, { grants: { serial: [{ alias: 'scale', path: pair.a, baud: 9600 }] }, options: { idle_close_ms: 60_000 } });
  });
  after(async () => {
    await inst?.close();
    await host.close();
    await pair.kill();
    rmSync(pair.dir, { recursive: true, force: true });
  });

  test('a port by its alias; the prompt names the alias', async () => {
    await play(scale());
    const o = await host.call('serial.request', weigh);
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    assert.deepEqual([(o.output as { text: string }).text, (o.output as { port: string }).port], ['  12.34 kg\r\n', 'scale']);
    assert.equal(host.prompts.at(-1)!.sentence, 'Send 3 bytes to scale and read its answer');
    assert.deepEqual(host.prompts.at(-1)!.resources.map((r) => [r.kind, r.id, r.label]), [['serial', pair.a, 'scale']]);
  });

  test('set_signals asks with each change named; a pty has no modem lines (typed error)', async () => {
    const o = await host.call('serial.set_signals', { port: 'scale', dtr: false, break_ms: 50 });
    assert.equal(host.prompts.at(-1)!.sentence, 'Change the control lines of scale: DTR off, a 50 ms break');
    assert.deepEqual([o.state, o.error?.type, o.error?.details?.['reason']], ['failed', 'execution_failed', 'not_supported']);
  });

  test('an ungranted port and bad arguments end rejected before any prompt', async () => {
    const before = host.prompts.length;
    const a = await host.call('serial.request', { port: '/dev/ttyS0', until: { idle_ms: 10 } });
    assert.deepEqual([a.state, a.error?.type], ['rejected', 'permission_denied']);
    const b = await host.call('serial.request', { ...weigh, until: { regex: '(' } });
    assert.deepEqual([b.state, b.error?.type], ['rejected', 'invalid_arguments']);
    const c = await host.call('serial.write', { port: 'scale', data: { hex: 'zz' } });
    assert.deepEqual([c.state, c.error?.type], ['rejected', 'invalid_arguments']);
    assert.equal(host.prompts.length, before, 'nobody was asked');
  });

  test('cancel mid-read: cancelled at once, the port is reused by the next call', async () => {
    await play(silent);
    const run = host.start('serial.request', { ...weigh, until: { delimiter: '\n', max_ms: 60_000 } });
    await inst!.receivedAtLeast(3);
    await host.cancel(run.callId);
    const o = await run.outcome;
    assert.deepEqual([o.state, o.error?.side_effects], ['cancelled', 'none']);
    await play(scale());
    const next = await host.call('serial.request', weigh);
    assert.deepEqual([next.state, (next.output as { reused_port: boolean }).reused_port], ['completed', true]);
  });

  test('timeout mid-read: failed/timeout; the next call works', async () => {
    await play(silent);
    const o = await host.call('serial.request', { ...weigh, until: { delimiter: '\n', max_ms: 60_000 } }, { timeoutMs: 300 });
    assert.deepEqual([o.state, o.error?.type], ['failed', 'timeout']);
    await play(scale());
    assert.equal((await host.call('serial.request', weigh)).state, 'completed');
  });

  test('live grants: an alias the user adds under the administrator\'s * is usable at once, and gone once removed', async () => {
    const second = await startPtyPair();
    const lab = await createTestHost(handler, { grants: { serial: ['*'] } });
    try {
      lab.grants.add('serial', { path: second.a, alias: 'meter' });
      const peer = await Instrument.open(second.b, scale(' 7.5 V'));
      const o = await lab.call('serial.request', { ...weigh, port: 'meter' });
      assert.deepEqual([o.state, (o.output as { text: string }).text, (o.output as { path: string }).path], ['completed', ' 7.5 V\r\n', second.a]);
      await peer.close();
      lab.grants.remove('serial', 'meter');
      // No alias any more: under `*`, "meter" is now taken as a path, which is no port the OS lists (and
      // neither is the pty itself: a `*` grant never covers a pseudo-terminal).
      const gone = await lab.call('serial.request', { ...weigh, port: 'meter' });
      assert.deepEqual([gone.state, gone.error?.type, gone.error?.details?.['rule']], ['rejected', 'permission_denied', 'not_a_listed_port']);
      const byPath = await lab.call('serial.request', { ...weigh, port: second.a });
      assert.deepEqual([byPath.state, byPath.error?.details?.['rule']], ['rejected', 'not_a_listed_port']);
    } finally {
      await lab.close();
      await second.kill();
      rmSync(second.dir, { recursive: true, force: true });
    }
  });

  test('pause releases the port to other programs; the next call after resume opens it again', async () => {
    await play(scale());
    assert.equal((await host.call('serial.request', weigh)).state, 'completed');
    assert.equal(lockable(pair.a), false, 'the pooled port is held');
    await host.pause();
    assert.equal(lockable(pair.a), true, 'released on pause');
    await host.resume();
    const o = await host.call('serial.request', weigh);
    assert.deepEqual([o.state, (o.output as { reused_port: boolean }).reused_port], ['completed', false]);
  });

  test('zh-CN prompts come from the Chinese catalogue', async () => {
    const zh = await createTestHost(handler, { grants: { serial: [{ alias: 'scale', path: pair.a }] }, locale: 'zh-CN' });
    try {
      await host.pause(); // one opener at a time: the other host lets go of the port
      await host.resume();
      await play(scale());
      const o = await zh.call('serial.request', weigh);
      assert.equal(o.state, 'completed', JSON.stringify(o.error));
      assert.equal(zh.prompts.at(-1)!.sentence, '向 scale 发送 3 字节 并读取其应答');
    } finally {
      await zh.close();
    }
    assert.equal(lockable(pair.a), true, 'released on shutdown (dispose)');
  });
});
