/**
 * The bluetooth handler through noble's real JavaScript API and its WebSocket binding, against a
 * simulated adapter and peripherals (./simulator.ts).
 *
 * A PROTOCOL SIMULATOR, NOT A RADIO: these machines have no Bluetooth in the kernel. What runs for real:
 * noble (scan, connect, discovery, read, write, notify, disconnect, adapter state), this handler's pool,
 * scan sharing, grants, error mapping and cancellation, and (last test) a CLI-started agent and bridge.
 * What does not: any radio, BlueZ, CoreBluetooth, WinRT.
 *
 * noble's WebSocket binding dials the fixed port 2846, so every simulator test lives in this one file and
 * runs in order (node:test runs the tests of a file one after another).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BleSimulator, standardPeripherals, type SimCommand } from './simulator.js';
import { TestHandler, ctx, logged, rejectsWith } from './harness.js';
import { agentDoc, bridgeDoc, cli, ids, tempDir, tokens, until } from '../../../test/helpers/stack.js';
import { RuntimeClient } from '../../../src/runtime-client/client.js';
import { createTestHost, render } from '../../../src/kit/testing.js';
import handler from '../index.js';
import { slow } from '../../../test/helpers/wait.js';

const FRIDGE = 'a4c138000001';
const LAMP = 'c0ffee000002';
let sim: BleSimulator;
let h: TestHandler;

const grants = [{ alias: 'fridge', id: 'A4:C1:38:00:00:01', services: ['181A', '0000ffe0-0000-1000-8000-00805f9b34fb'] }, LAMP];
const since = () => sim.commands.length;
/** A peripheral takes one central: the shared handler lets go of the fridge before another host uses it. */
const freeFridge = () => h.call('bluetooth.disconnect', { device: 'fridge' });
const sent = (from: number, pred: (c: SimCommand) => boolean) => sim.commands.slice(from).filter(pred);

before(async () => {
  sim = await new BleSimulator(standardPeripherals()).start();
  h = await TestHandler.create(grants);
});
after(() => sim.stop());

test('state: the simulated adapter is present and powered on', async () => {
  const s = await h.call('bluetooth.state', {});
  assert.deepEqual(s, { present: true, powered: true, authorised: true });
});

test('scan: every advertiser once, with name, RSSI, services, manufacturer data, the alias; progress as found; the adapter stops scanning after', async () => {
  const from = since();
  const c = ctx();
  const out = await h.call('bluetooth.scan', { duration_ms: 600 }, c);
  const ps = out['peripherals'] as Record<string, unknown>[];
  assert.deepEqual(ps.map((p) => p['id']), [FRIDGE, LAMP, 'beac00000003'], 'deduplicated, strongest first');
  assert.deepEqual(ps[0], { id: FRIDGE, address: 'a4:c1:38:00:00:01', name: 'Fridge TH', rssi: -48, services: ['181a'], manufacturer_data: '59000102', connectable: true, alias: 'fridge' });
  assert.equal(ps[2]!['connectable'], false);
  assert.equal(out['complete'], true);
  assert.deepEqual(c.progressSeen.map((p) => p.progress), [1, 2, 3]);
  await sim.waitFor((x) => x.action === 'stopScanning', from);
  assert.equal(sim.scanning, false);
});

test('scan filters: service UUID in any spelling, name prefix, RSSI floor, max_results', async () => {
  const ids = async (a: Record<string, unknown>) => ((await h.call('bluetooth.scan', { duration_ms: 400, ...a }))['peripherals'] as { id: string }[]).map((p) => p.id);
  assert.deepEqual(await ids({ services: ['0000181A-0000-1000-8000-00805F9B34FB'] }), [FRIDGE]);
  assert.deepEqual(await ids({ name_prefix: 'Desk' }), [LAMP]);
  assert.deepEqual(await ids({ min_rssi: -75 }), [FRIDGE, LAMP]);
  const first = await h.call('bluetooth.scan', { duration_ms: 20_000, max_results: 1 });
  assert.equal((first['peripherals'] as unknown[]).length, 1);
  assert.equal(first['complete'], false, 'stopped early at max_results, long before 20 s');
});

test('scan: cancel stops it at once and the adapter stops scanning', async () => {
  const from = since();
  const c = ctx((_p, me) => me.controller.abort(new Error('cancelled by test')));
  const t0 = Date.now();
  await assert.rejects(h.call('bluetooth.scan', { duration_ms: 30_000 }, c), /cancelled by test/);
  assert.ok(Date.now() - t0 < 10_000, 'returned long before the 30 s scan would end');
  await sim.waitFor((x) => x.action === 'stopScanning', from);
});

test('scan needs Bluetooth to be shared at all', async () => {
  const none = await TestHandler.create([]);
  await rejectsWith(none.call('bluetooth.scan', { duration_ms: 200 }), 'permission_denied', 'not_granted');
});

test('services: only the services the grant shares, with characteristic properties', async () => {
  const out = await h.call('bluetooth.services', { device: 'fridge' });
  assert.deepEqual(out['device'], { id: FRIDGE, alias: 'fridge' });
  const svc = out['services'] as { uuid: string; name?: string; characteristics: { uuid: string; properties: string[] }[] }[];
  assert.deepEqual(svc.map((s) => s.uuid), ['181a', 'ffe0'], 'battery service 180f is not shared');
  assert.equal(svc[0]!.name, 'Environmental Sensing');
  assert.deepEqual(svc[0]!.characteristics.map((c) => [c.uuid, c.properties]), [['2a6e', ['read', 'notify']], ['2a6f', ['read']]]);
});

test('read by alias; the connection is pooled (one connect for several calls) and closed when idle', async () => {
  // A connected peripheral stops advertising (as real ones do): let the shared handler's link go first.
  await h.call('bluetooth.disconnect', { device: 'fridge' });
  const quick = await TestHandler.create(grants, { binding: 'websocket', idle_ms: 300, find_ms: 5000 });
  const from = since();
  const r1 = await quick.call('bluetooth.read', { device: 'fridge', service: '181a', characteristic: '2A6E' });
  assert.deepEqual(r1, { device: { id: FRIDGE, alias: 'fridge' }, service: '181a', characteristic: '2a6e', size: 2, hex: '2003', base64: 'IAM=' });
  const r2 = await quick.call('bluetooth.read', { device: 'fridge', service: '181a', characteristic: '2a6f' });
  assert.equal(r2['hex'], '3200');
  assert.equal(sent(from, (c) => c.action === 'connect').length, 1, 'the second read reused the connection');
  await sim.waitFor((c) => c.action === 'disconnect' && c.peripheralUuid === FRIDGE, from);
  assert.ok(!sim.isConnected(FRIDGE), 'closed after 300 ms idle');
});

test('a peripheral or service that is not granted is refused before anything is sent to it', async () => {
  const from = since();
  await rejectsWith(h.call('bluetooth.read', { device: 'beac00000003', service: '180f', characteristic: '2a19' }), 'permission_denied', 'not_granted');
  await rejectsWith(h.call('bluetooth.read', { device: 'fridge', service: '180f', characteristic: '2a19' }), 'permission_denied', 'service_not_granted');
  await rejectsWith(h.call('bluetooth.write', { device: 'fridge', service: '180f', characteristic: '2a19', hex: '00' }), 'permission_denied', 'service_not_granted');
  await rejectsWith(h.call('bluetooth.subscribe', { device: 'nobody', service: '181a', characteristic: '2a6e' }), 'permission_denied', 'not_granted');
  assert.deepEqual(sent(from, (c) => c.action === 'connect'), [], 'nothing connected');
});

test('write with and without response changes the value; unsupported and unknown characteristics are typed errors', async () => {
  const from = since();
  const w = await h.call('bluetooth.write', { device: 'fridge', service: 'ffe0', characteristic: 'ffe1', text: 'on' });
  assert.deepEqual(w, { device: { id: FRIDGE, alias: 'fridge' }, service: 'ffe0', characteristic: 'ffe1', size: 2, with_response: true });
  assert.equal(sim.peripheral(FRIDGE).services[2]!.characteristics[0]!.value!.toString(), 'on');
  await h.call('bluetooth.write', { device: 'fridge', service: 'ffe0', characteristic: 'ffe1', hex: '0a0B', without_response: true });
  const cmd = await sim.waitFor((c) => c.action === 'write' && c.withoutResponse === true, from);
  assert.equal(cmd.data, '0a0b');
  assert.equal((await h.call('bluetooth.read', { device: 'fridge', service: 'ffe0', characteristic: 'ffe1' }))['hex'], '0a0b');
  await rejectsWith(h.call('bluetooth.write', { device: 'fridge', service: '181a', characteristic: '2a6e', hex: '00' }), 'invalid_arguments', 'not_supported');
  await rejectsWith(h.call('bluetooth.read', { device: 'fridge', service: '181a', characteristic: '2a99' }), 'invalid_arguments', 'no_such_characteristic');
  await rejectsWith(h.call('bluetooth.read', { device: LAMP, service: 'abcd', characteristic: 'fff1' }), 'invalid_arguments', 'no_such_characteristic');
});

test('text values: read gives text when the value is printable', async () => {
  await h.call('bluetooth.write', { device: LAMP, service: 'fff0', characteristic: 'fff1', text: 'warm white' });
  const r = await h.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' });
  assert.equal(r['text'], 'warm white');
  await h.call('bluetooth.write', { device: LAMP, service: 'fff0', characteristic: 'fff1', base64: Buffer.from([0, 1, 255]).toString('base64') });
  const bin = await h.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' });
  assert.equal(bin['hex'], '0001ff');
  assert.equal(bin['text'], undefined);
});

test('subscribe: values until count, progress with the latest value, then unsubscribed', async () => {
  const from = since();
  let n = 0;
  const pushUntilDone = sim.waitFor((c) => c.action === 'notify' && c.notify === true, from).then(() => {
    // The peripheral notifies three times once noble has subscribed (and a fourth that must not count).
    for (const v of [0x0320, 0x0321, 0x0322, 0x0323]) if (sim.notify(FRIDGE, '181a', '2a6e', Buffer.from([v & 0xff, v >> 8]))) n++;
  });
  const c = ctx();
  const out = await h.call('bluetooth.subscribe', { device: 'fridge', service: '181a', characteristic: '2a6e', count: 3, duration_ms: 60_000 }, c);
  await pushUntilDone;
  assert.equal(n, 4);
  assert.equal(out['ended'], 'count');
  assert.equal(out['received'], 3);
  assert.deepEqual((out['values'] as { hex: string }[]).map((v) => v.hex), ['2003', '2103', '2203']);
  assert.deepEqual(c.progressSeen.map((p) => [p.progress, p.total, p.message]), [[1, 3, '2003'], [2, 3, '2103'], [3, 3, '2203']]);
  await sim.waitFor((x) => x.action === 'notify' && x.notify === false, from);
  assert.ok(!sim.subscribed.has(`${FRIDGE}/181a/2a6e`));
});

test('subscribe: bounded by duration, and max_values keeps the first values while counting all', async () => {
  const from = since();
  void sim.waitFor((c) => c.action === 'notify' && c.notify === true, from).then(() => {
    for (let i = 0; i < 5; i++) sim.notify(FRIDGE, '181a', '2a6e', Buffer.from([i]));
  });
  const out = await h.call('bluetooth.subscribe', { device: 'fridge', service: '181a', characteristic: '2a6e', duration_ms: 1500, max_values: 2 });
  assert.equal(out['ended'], 'duration');
  assert.equal(out['received'], 5);
  assert.equal(out['truncated'], true);
  assert.deepEqual((out['values'] as { hex: string }[]).map((v) => v.hex), ['00', '01']);
});

test('subscribe: cancel stops it at once and unsubscribes', async () => {
  const from = since();
  void sim.waitFor((c) => c.action === 'notify' && c.notify === true, from).then(() => sim.notify(FRIDGE, '181a', '2a6e', Buffer.from([1, 2])));
  const c = ctx((_p, me) => me.controller.abort(new Error('cancelled by test')));
  const t0 = Date.now();
  await assert.rejects(h.call('bluetooth.subscribe', { device: 'fridge', service: '181a', characteristic: '2a6e', duration_ms: 300_000 }, c), /cancelled by test/);
  assert.ok(Date.now() - t0 < 10_000);
  await sim.waitFor((x) => x.action === 'notify' && x.notify === false, from);
  assert.ok(!sim.subscribed.has(`${FRIDGE}/181a/2a6e`));
});

test('a peripheral that drops the link mid-call: device_unavailable/disconnected, and the next call reconnects', async () => {
  await h.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' });
  const from = since();
  sim.hook = (c) => (c.action === 'read' ? 'disconnect' : 'answer');
  try {
    await rejectsWith(h.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' }), 'device_unavailable', 'disconnected');
  } finally {
    sim.hook = () => 'answer';
  }
  const again = await h.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' });
  assert.equal(again['size'], 3);
  assert.equal(sent(from, (c) => c.action === 'connect' && c.peripheralUuid === LAMP).length, 1, 'reconnected once');
});

test('a timeout on a request the peripheral never answers stops the call, and the link is dropped (noble might still answer it late)', async () => {
  await h.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' });
  const from = since();
  sim.hook = (c) => (c.action === 'read' ? 'ignore' : 'answer');
  try {
    const c = ctx();
    const p = h.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' }, c);
    await sim.waitFor((x) => x.action === 'read', from);
    c.controller.abort(new Error('timeout by test'));
    await assert.rejects(p, /timeout by test/);
    await sim.waitFor((x) => x.action === 'disconnect' && x.peripheralUuid === LAMP, from);
  } finally {
    sim.hook = () => 'answer';
  }
  assert.equal((await h.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' }))['size'], 3);
});

test('disconnect closes the pooled connection now', async () => {
  await h.call('bluetooth.read', { device: 'fridge', service: '181a', characteristic: '2a6e' });
  assert.ok(sim.isConnected(FRIDGE));
  assert.deepEqual(await h.call('bluetooth.disconnect', { device: 'fridge' }), { device: { id: FRIDGE, alias: 'fridge' }, was_connected: true });
  assert.ok(!sim.isConnected(FRIDGE));
  assert.deepEqual(await h.call('bluetooth.disconnect', { device: 'fridge' }), { device: { id: FRIDGE, alias: 'fridge' }, was_connected: false });
});

test('adapter switched off: a scan and a subscription in progress end powered_off; state says so, calls fail device_unavailable/powered_off; switched on again: calls work', async () => {
  const from = since();
  const scanning = h.call('bluetooth.scan', { duration_ms: 30_000 });
  const subscribed = h.call('bluetooth.subscribe', { device: 'fridge', service: '181a', characteristic: '2a6e', duration_ms: 300_000 });
  await sim.waitFor((c) => c.action === 'startScanning', from);
  await sim.waitFor((c) => c.action === 'notify' && c.notify === true, from);
  sim.setState('poweredOff');
  try {
    await rejectsWith(scanning, 'device_unavailable', 'powered_off');
    await rejectsWith(subscribed, 'device_unavailable', 'powered_off');
    await until(async () => (await h.call('bluetooth.state', {}))['reason'] === 'powered_off', 10_000, 'state powered_off');
    const s = await h.call('bluetooth.state', {});
    assert.equal(s['powered'], false);
    assert.match(String(s['advice']), /switch it on/);
    await rejectsWith(h.call('bluetooth.read', { device: 'fridge', service: '181a', characteristic: '2a6e' }), 'device_unavailable', 'powered_off');
    await rejectsWith(h.call('bluetooth.scan', { duration_ms: 200 }), 'device_unavailable', 'powered_off');
  } finally {
    sim.setState('poweredOn');
  }
  await until(async () => (await h.call('bluetooth.state', {}))['powered'] === true, 10_000, 'powered on again');
  assert.equal((await h.call('bluetooth.read', { device: 'fridge', service: '181a', characteristic: '2a6e' }))['hex'], '2003');
});

test('OS refusal (adapter unauthorized) is permission_denied with the fix', async () => {
  sim.setState('unauthorized');
  try {
    await until(async () => (await h.call('bluetooth.state', {}))['authorised'] === false, 10_000, 'state unauthorized');
    const e = await rejectsWith(h.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' }), 'permission_denied', 'os_refused');
    assert.match(e.message, /Privacy & Security > Bluetooth/);
  } finally {
    sim.setState('poweredOn');
  }
  await until(async () => (await h.call('bluetooth.state', {}))['powered'] === true, 10_000, 'powered on again');
});

test('nothing read, written or notified appears in the handler\'s log lines', () => {
  const text = JSON.stringify(logged);
  for (const secret of ['2003', '0a0b', 'warm white', '0001ff', '2103']) assert.ok(!text.includes(secret), `log holds ${secret}`);
});

test('kit test host: an unshared peripheral or service ends rejected/permission_denied before any prompt, and nothing is sent', async () => {
  await freeFridge();
  const host = await createTestHost(handler, { grants: { bluetooth: grants }, options: { binding: 'websocket' } });
  try {
    const from = since();
    for (const [fn, args, reason] of [
      ['bluetooth.write', { device: 'beac00000003', service: '180f', characteristic: '2a19', hex: '00' }, 'not_granted'],
      ['bluetooth.read', { device: 'fridge', service: '180f', characteristic: '2a19' }, 'service_not_granted'],
    ] as const) {
      const o = await host.call(fn, args);
      assert.equal(o.state, 'rejected', fn);
      assert.equal(o.error?.type, 'permission_denied', fn);
      assert.equal((o.error?.details as { reason?: string } | undefined)?.reason, reason, fn);
      assert.equal(o.error?.side_effects, 'none');
    }
    assert.deepEqual(host.prompts, [], 'nobody was asked');
    assert.deepEqual(sent(from, (c) => c.action === 'connect'), []);
  } finally {
    await host.close();
  }
});

test('kit test host: the prompt names the alias, the characteristic and the size, in English and Chinese', async () => {
  await freeFridge();
  for (const locale of ['en', 'zh-CN'] as const) {
    const host = await createTestHost(handler, { grants: { bluetooth: grants }, options: { binding: 'websocket' }, locale });
    try {
      const o = await host.call('bluetooth.write', { device: 'fridge', service: 'ffe0', characteristic: 'ffe1', text: 'on' });
      assert.equal(o.state, 'completed', JSON.stringify(o.error));
      assert.equal(host.prompts[0]?.sentence, render('bluetooth.write', { bytes: 2, characteristic: 'ffe1', device: 'fridge' }, locale));
      assert.match(host.prompts[0]!.sentence, locale === 'en' ? /^Send 2 bytes to ffe1 on fridge$/ : /fridge.*ffe1.*2 字节/);
      const r = await host.call('bluetooth.read', { device: 'fridge', service: '181a', characteristic: '2a6e' });
      assert.match(host.prompts[1]!.sentence, /Temperature \(2a6e\)/);
      assert.equal((r.output as { hex: string }).hex, '2003');
    } finally {
      await host.close();
    }
  }
});

test('kit test host: pausing closes the pooled connection; closing the handler lets go of noble', async () => {
  await freeFridge();
  const host = await createTestHost(handler, { grants: { bluetooth: grants }, options: { binding: 'websocket', idle_ms: 600_000 } });
  let closed = false;
  try {
    const clients = sim.clientCount;
    assert.equal((await host.call('bluetooth.read', { device: 'fridge', service: '181a', characteristic: '2a6e' })).state, 'completed');
    assert.ok(sim.isConnected(FRIDGE));
    const from = since();
    await host.pause();
    await sim.waitFor((c) => c.action === 'disconnect' && c.peripheralUuid === FRIDGE, from);
    await host.resume();
    assert.equal((await host.call('bluetooth.read', { device: 'fridge', service: '181a', characteristic: '2a6e' })).state, 'completed', 'reconnects after resume');
    await host.close();
    closed = true;
    await until(() => sim.clientCount === clients - 1 && !sim.isConnected(FRIDGE), 10_000, 'noble\'s socket closed and the link gone');
  } finally {
    if (!closed) await host.close();
  }
});

test('kit test host: cancelling a subscription ends it cancelled at once and unsubscribes', async () => {
  await freeFridge();
  const host = await createTestHost(handler, { grants: { bluetooth: grants }, options: { binding: 'websocket' } });
  try {
    const from = since();
    const { callId, outcome } = host.start('bluetooth.subscribe', { device: 'fridge', service: '181a', characteristic: '2a6e', duration_ms: 300_000 }, { timeoutMs: 330_000 });
    await sim.waitFor((c) => c.action === 'notify' && c.notify === true, from);
    sim.notify(FRIDGE, '181a', '2a6e', Buffer.from([7]));
    await until(() => host.progress.length > 0, 10_000, 'progress with the first value');
    assert.equal(host.progress[0]?.message, '07');
    await host.cancel(callId);
    const o = await outcome;
    assert.equal(o.state, 'cancelled');
    await sim.waitFor((c) => c.action === 'notify' && c.notify === false, from);
    assert.ok(!sim.subscribed.has(`${FRIDGE}/181a/2a6e`));
  } finally {
    await host.close();
  }
});

test('kit test host: a subscription that outlives its call budget ends failed/timeout and unsubscribes', async () => {
  await freeFridge();
  const host = await createTestHost(handler, { grants: { bluetooth: grants }, options: { binding: 'websocket' } });
  try {
    const from = since();
    const o = await host.call('bluetooth.subscribe', { device: 'fridge', service: '181a', characteristic: '2a6e', duration_ms: 300_000 }, { timeoutMs: 1500 });
    assert.equal(o.state, 'failed');
    assert.equal(o.error?.type, 'timeout');
    await sim.waitFor((c) => c.action === 'notify' && c.notify === false, from);
    assert.ok(!sim.subscribed.has(`${FRIDGE}/181a/2a6e`));
  } finally {
    await host.close();
  }
});

test('through a CLI-started bridge and agent: read and write over the whole path; noble\'s console output stays off the agent\'s stdout', async () => {
  const dir = tempDir('aios-ble-');
  const t = tokens();
  const bcfg = join(dir, 'bridge.cfg.json');
  writeFileSync(bcfg, JSON.stringify(bridgeDoc(dir, t)));
  const bridge = cli(['bridge', '--config', bcfg]);
  let agent: ReturnType<typeof cli> | undefined;
  try {
    const bridgeFile = join(dir, 'bridge', 'bridge.json');
    await until(() => existsSync(bridgeFile), 30_000, 'bridge.json');
    const url = (JSON.parse(readFileSync(bridgeFile, 'utf8')) as { url: string }).url;
    const acfg = join(dir, 'agent.cfg.json');
    writeFileSync(acfg, JSON.stringify(agentDoc(dir, url, t, {
      grants: { bluetooth: [FRIDGE] },
      policy: { 'bluetooth.write': 'allow' },
      confirmations: { provider: 'none' },
      handlers: { bluetooth: { binding: 'websocket' } },
      log: { level: 'debug', file: join(dir, 'agent.log') },
    })));
    agent = cli(['run', '--config', acfg]);
    const client = new RuntimeClient({ bridge_url: url, token: t.runtime, workspace_id: ids.workspace_id, device_id: ids.device_id });
    await until(async () => (await client.device(ids.device_id))['online'] === true, 30_000, 'agent online');
    const from = since();
    const w = (await client.call('bluetooth.write', { device: FRIDGE, service: 'ffe0', characteristic: 'ffe1', text: 'cli' })).record.outcome!;
    assert.equal(w.state, 'completed', JSON.stringify(w.error));
    const r = (await client.call('bluetooth.read', { device: FRIDGE, service: 'ffe0', characteristic: 'ffe1' })).record.outcome!;
    assert.equal(r.state, 'completed', JSON.stringify(r.error));
    assert.equal((r.output as { text: string }).text, 'cli');
    assert.equal(sent(from, (c) => c.action === 'connect').length, 1, 'one pooled connection for both calls');
    // The agent's stdout is the CLI's: noble's "on -> open" and state lines must not be on it.
    assert.doesNotMatch(agent.out, /on -> open|poweredOn/);
    const log = readFileSync(join(dir, 'agent.log'), 'utf8');
    assert.match(log, /noble console output/, 'diverted to the log at debug level instead');
    assert.ok(!log.includes('636c69'), 'the value written (hex) is not logged');
    // A peripheral that is not shared: refused before anyone is asked, and nothing sent to it.
    const before = since();
    const denied = (await client.call('bluetooth.read', { device: LAMP, service: 'fff0', characteristic: 'fff1' })).record.outcome!;
    assert.equal(denied.state, 'rejected');
    assert.equal(denied.error?.type, 'permission_denied');
    assert.deepEqual(sent(before, (c) => c.action === 'connect'), []);
  } finally {
    await agent?.kill('SIGTERM');
    await bridge.kill('SIGKILL');
  }
});

test('the Bluetooth bench runs end to end with tiny counts (its own simulator; figures are not checked here)', { timeout: slow(180_000) }, async () => {
  // The bench owns port 2846 while it runs: this file's simulator steps aside for it.
  await sim.stop();
  const { runBluetoothBench } = await import('../../../bench/bluetooth.js');
  const r = await runBluetoothBench({ warmup: 2, latencyN: 5, throughputN: 5, concurrency: 2, rounds: 1 });
  assert.equal(r.results.length, 2);
  for (const x of r.results) assert.ok(x.throughput.callsPerS > 0 && x.latency.p50Us > 0, x.name);
  assert.ok(Number.isFinite(r.latencyRatio) && r.latencyRatio > 0);
});
