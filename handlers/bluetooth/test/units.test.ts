/** Unit tests of the handler's pure logic: UUIDs, grants, options, load failures, states, locks. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normPeripheralId, normUuid, gattName } from '../uuid.js';
import { aliasOf, coversService, findBluetoothGrant, normalizeBluetoothGrant } from '../grants.js';
import { parseOptions } from '../runtime.js';
import { loadFailure } from '../noble-loader.js';
import { describeState, stateError } from '../session.js';
import { toWireError } from '../functions.js';
import { BleError } from '../errors.js';
import { TestHandler } from './harness.js';
import { schemaValidator } from '../../../src/protocol/schema-validator.js';

test('UUIDs: every spelling of a SIG UUID is the short form; custom 128-bit UUIDs keep 32 digits', () => {
  for (const u of ['181a', '181A', '0x181a', '0000181a', '0000181a-0000-1000-8000-00805f9b34fb', '0000181A00001000800000805F9B34FB']) assert.equal(normUuid(u), '181a', u);
  assert.equal(normUuid('12345678'), '12345678');
  assert.equal(normUuid('6E400001-B5A3-F393-E0A9-E50E24DCCA9E'), '6e400001b5a3f393e0a9e50e24dcca9e');
  for (const bad of ['', '18a', 'xyz1', '181a-']) assert.equal(normUuid(bad), undefined, bad);
  assert.equal(normPeripheralId('A4:C1:38:00:00:01'), 'a4c138000001');
  assert.equal(gattName('2a6e'), 'Temperature');
  assert.equal(gattName('ffe1'), undefined);
});

test('grants: strings, "*", objects with alias and services; alias first, then id, then "*"', () => {
  const gs = ['C0:FF:EE:00:00:02', { alias: 'fridge', id: 'A4:C1:38:00:00:01', services: ['181A'] }].map(normalizeBluetoothGrant);
  assert.deepEqual(findBluetoothGrant(gs, 'fridge'), { kind: 'bluetooth', id: 'a4c138000001', alias: 'fridge', settings: { services: ['181a'] } });
  assert.equal(findBluetoothGrant(gs, 'a4:c1:38:00:00:01')?.alias, 'fridge', 'by id in another spelling');
  assert.equal(findBluetoothGrant(gs, 'c0ffee000002')?.id, 'c0ffee000002');
  assert.equal(findBluetoothGrant(gs, 'beac00000003'), undefined);
  const any = [...gs, normalizeBluetoothGrant('*')];
  assert.deepEqual(findBluetoothGrant(any, 'BE:AC:00:00:00:03'), { kind: 'bluetooth', id: 'beac00000003' });
  assert.equal(coversService(gs[1]!, '181a'), true);
  assert.equal(coversService(gs[1]!, '180f'), false);
  assert.equal(coversService(gs[0]!, '180f'), true, 'no services list: every service');
  assert.equal(aliasOf(gs, 'xx', 'a4:c1:38:00:00:01'), 'fridge');
  assert.throws(() => normalizeBluetoothGrant({ id: 'x', services: ['not-a-uuid'] }), /not a Bluetooth service UUID/);
});

test('options: defaults, the test-only websocket binding, and clear errors', () => {
  assert.deepEqual(parseOptions({}), { binding: 'default', idleMs: 5000, findMs: 10_000 });
  assert.equal(parseOptions({ binding: 'websocket' }).binding, 'websocket');
  assert.throws(() => parseOptions({ binding: 'serial' }), /binding: must be/);
  assert.throws(() => parseOptions({ idle: 5 }), /unknown option "idle"/);
  assert.throws(() => parseOptions({ idle_ms: -1 }), /idle_ms/);
});

test('load failures: what require threw becomes no_adapter, os_refused or not_installed', () => {
  const e = (code: string, message = code) => Object.assign(new Error(message), { code });
  assert.equal(loadFailure(e('EAFNOSUPPORT', 'EAFNOSUPPORT, Address family not supported by protocol')).fault, 'no_adapter');
  assert.equal(loadFailure(e('ENODEV')).fault, 'no_adapter');
  assert.equal(loadFailure(e('EPERM', 'EPERM, Operation not permitted')).fault, 'os_refused');
  assert.equal(loadFailure(e('MODULE_NOT_FOUND', "Cannot find module '@abandonware/noble'")).fault, 'not_installed');
});

test('adapter states map to the state answer and to typed failures', () => {
  assert.deepEqual(describeState('poweredOn'), { present: true, powered: true, authorised: true });
  assert.equal(describeState('poweredOff').reason, 'powered_off');
  assert.equal(describeState('unsupported').present, false);
  assert.equal(stateError('resetting').fault, 'not_ready');
  const w = toWireError(stateError('unauthorized')) as { type: string; details: { reason: string } };
  assert.equal(w.type, 'permission_denied');
  assert.equal(w.details.reason, 'os_refused');
  const d = toWireError(new BleError('disconnected', 'x'), 'possible') as { type: string; sideEffects: string; retryable: boolean };
  assert.deepEqual([d.type, d.sideEffects, d.retryable], ['device_unavailable', 'possible', true]);
});

test('locks: one lock per peripheral, ble:<id>, whether it is named by alias or id', async () => {
  const h = await TestHandler.create([{ alias: 'fridge', id: 'A4:C1:38:00:00:01' }], {});
  for (const fn of ['bluetooth.read', 'bluetooth.write', 'bluetooth.subscribe', 'bluetooth.services', 'bluetooth.disconnect']) {
    for (const device of ['fridge', 'A4:C1:38:00:00:01']) {
      const r = await h.resources(fn, { device, service: '181a', characteristic: '2a6e', hex: '00' });
      assert.deepEqual(r, [{ kind: 'bluetooth', id: 'a4c138000001', label: 'fridge', lock: 'ble:a4c138000001' }], `${fn} ${device}`);
    }
  }
  assert.deepEqual(await h.resources('bluetooth.scan', {}), [], 'a scan locks nothing');
  assert.equal(h.fn('bluetooth.scan').descriptor.locks.length, 0);
});

test('write takes its value as exactly one of hex, base64, text; UUIDs and bounds are checked by the schema', async () => {
  const h = await TestHandler.create([], {});
  const input = h.fn('bluetooth.write').descriptor.input_schema;
  const base = { device: 'fridge', service: '181a', characteristic: '2a6e' };
  const ok = (a: object) => schemaValidator.validate(input, { ...base, ...a }).length === 0;
  assert.ok(ok({ hex: '00ff' }) && ok({ base64: 'AP8=' }) && ok({ text: 'on' }));
  assert.ok(!ok({}), 'no value');
  assert.ok(!ok({ hex: '00', text: 'x' }), 'two values');
  assert.ok(!ok({ hex: '0' }), 'odd hex');
  assert.ok(!ok({ hex: '00'.repeat(513) }), 'over 512 bytes');
  assert.ok(!ok({ hex: '00', service: '181a-' }), 'bad UUID');
  const scan = h.fn('bluetooth.scan').descriptor.input_schema;
  assert.ok(schemaValidator.validate(scan, { duration_ms: 30_001 }).length > 0, 'scans are bounded to 30 s');
});

test('bluetooth.state from what the kit\'s optionalNative throws: no adapter, OS refusal, not installed', async () => {
  const { optionalNative } = await import('../../../src/sdk/index.js');
  const { BleRuntime } = await import('../runtime.js');
  const failing = (code: string, message: string, name: string) => () =>
    optionalNative(name, { feature: 'Bluetooth', load: () => Promise.reject(Object.assign(new Error(message), { code })) }) as Promise<never>;
  const state = (p: () => Promise<never>) => new BleRuntime(parseOptions({}), () => {}, p).state(new AbortController().signal);
  assert.deepEqual(await state(failing('EAFNOSUPPORT', 'EAFNOSUPPORT, Address family not supported by protocol', 'ble-test-a')), { present: false, powered: false, authorised: true, reason: 'no_adapter' });
  assert.deepEqual(await state(failing('EPERM', 'EPERM, Operation not permitted', 'ble-test-b')), { present: true, powered: false, authorised: false, reason: 'os_refused' });
  assert.deepEqual(await state(failing('ERR_MODULE_NOT_FOUND', "Cannot find package 'ble-test-c'", 'ble-test-c')), { present: false, powered: false, authorised: true, reason: 'not_installed' });
  // A call (not state) gets the kit's typed error itself.
  const rt = new BleRuntime(parseOptions({}), () => {}, failing('EPERM', 'EPERM', 'ble-test-d'));
  await assert.rejects(rt.get(), (e: unknown) => (e as { type?: string }).type === 'permission_denied' && (e as { details?: { reason?: string } }).details?.reason === 'os_refused');
});

test('bluetooth.state answers no_adapter without loading noble when the system says there is no Bluetooth; other calls still load it', async () => {
  const { BleRuntime } = await import('../runtime.js');
  let loads = 0;
  const platform = () => {
    loads++;
    return Promise.reject(new BleError('no_adapter', 'none')) as Promise<never>;
  };
  const rt = new BleRuntime(parseOptions({}), () => {}, platform, () => true);
  assert.deepEqual(await rt.state(new AbortController().signal), { present: false, powered: false, authorised: true, reason: 'no_adapter' });
  assert.equal(loads, 0, 'noble was not loaded for the state');
  await assert.rejects(rt.get());
  assert.equal(loads, 1, 'a call that needs the adapter still loads noble (and reports its own error)');
});

test('linuxWithoutBluetooth: true only on Linux with /sys/class but no /sys/class/bluetooth', async () => {
  const { existsSync } = await import('node:fs');
  const { linuxWithoutBluetooth } = await import('../noble-loader.js');
  const expected = process.platform === 'linux' && existsSync('/sys/class') && !existsSync('/sys/class/bluetooth');
  assert.equal(linuxWithoutBluetooth(), expected);
});
