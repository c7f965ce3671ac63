/**
 * Unit tests of the serial engine's logic that no pseudo-terminal can exercise: the matcher's edge
 * cases (including a pathological regex), the listing logic on recorded list output of Linux (the real
 * udevadm parser of @serialport/bindings-cpp fed a recorded `udevadm info -e`), macOS and Windows (the
 * bindings' list shapes for those systems; ptys are never listed, so this is how listing is tested),
 * the OS error mapping per platform, grants with aliases, and modem lines on a fake port (a pty has no
 * modem lines: TIOCMGET/TIOCMSET fail with ENOTTY, see engine-pty.test.ts).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// The bindings' own Linux list parser and Windows serial-number parser, fed recorded data.
import { linuxList } from '@serialport/bindings-cpp/dist/linux-list.js';
import { serialNumParser } from '@serialport/bindings-cpp/dist/win32-sn-parser.js';
import type { BindingPort, PortInfo, SetFlags } from '../engine/binding.js';
import { faultFromOsError, SerialFault } from '../engine/faults.js';
import { SerialLink } from '../engine/link.js';
import { listPorts } from '../engine/listing.js';
import { Matcher } from '../engine/matcher.js';
import { payloadBytes } from '../engine/payload.js';
import { applySignals, readSignals } from '../engine/signals.js';
import { coversPort, grantSettings, serialGrants } from '../grant-kind.js';

const fixtures = join(import.meta.dirname, 'fixtures');
const spec = { maxBytes: 1000, encoding: 'utf8' as const };

describe('matcher', () => {
  test('a delimiter split across chunks is found; bytes after it are handed back', () => {
    const m = new Matcher({ ...spec, delimiter: Buffer.from('\r\n') });
    assert.equal(m.push(Buffer.from('12.3')), undefined);
    assert.equal(m.push(Buffer.from('4 kg\r')), undefined);
    const end = m.push(Buffer.from('\nNEXT'))!;
    assert.deepEqual([end.ended, end.data.toString(), end.rest.toString()], ['delimiter', '12.34 kg\r\n', 'NEXT']);
  });

  test('the earliest end wins when several hold in one chunk (a tie goes to the delimiter)', () => {
    const m = new Matcher({ ...spec, delimiter: Buffer.from(';'), bytes: 2 });
    const end = m.push(Buffer.from('ab;cd'))!;
    assert.deepEqual([end.ended, end.data.toString(), end.rest.toString()], ['bytes', 'ab', ';cd']);
    const tie = new Matcher({ ...spec, delimiter: Buffer.from(';'), bytes: 3 }).push(Buffer.from('ab;cd'))!;
    assert.deepEqual([tie.ended, tie.data.toString()], ['delimiter', 'ab;']);
    const m2 = new Matcher({ ...spec, delimiter: Buffer.from(';'), bytes: 4, includeDelimiter: false });
    const e2 = m2.push(Buffer.from('ab;cd'))!;
    assert.deepEqual([e2.ended, e2.data.toString(), e2.rest.toString()], ['delimiter', 'ab', 'cd']);
  });

  test('regex positions map back to bytes (multi-byte text)', () => {
    const m = new Matcher({ ...spec, regex: { source: '温度=(\\d+)', flags: '' } });
    const end = m.push(Buffer.from('状态 温度=23 后'))!;
    assert.deepEqual([end.ended, end.match, end.data.toString(), end.rest.toString()], ['regex', '温度=23', '状态 温度=23', ' 后']);
  });

  test('the size limit ends the read at exactly maxBytes', () => {
    const m = new Matcher({ ...spec, maxBytes: 5, delimiter: Buffer.from('x') });
    const end = m.push(Buffer.from('abcdefgh'))!;
    assert.deepEqual([end.ended, end.data.toString(), end.rest.toString()], ['limit', 'abcde', 'fgh']);
  });

  test('a pathological regex is stopped by its time budget, not left to freeze the agent', () => {
    const m = new Matcher({ ...spec, maxBytes: 100_000, regex: { source: '^(a+)+$', flags: '' } });
    const t0 = performance.now();
    assert.throws(() => m.push(Buffer.from('a'.repeat(40) + 'b')), (e: SerialFault) => e.reason === 'regex_too_slow' && e.type === 'invalid_arguments');
    assert.ok(performance.now() - t0 < 5000);
  });
});

describe('listing (recorded list output; ptys are never listed by the OS)', () => {
  const grants = [{ path: '/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0', alias: 'scale' }, { path: '/tmp/ttyVirtual', alias: 'sim' }];

  test('Linux: the bindings parse a recorded udevadm dump; granted ports first with details, others named only', async () => {
    const file = join(fixtures, 'udevadm-info-linux.txt');
    const infos = (await linuxList((() => spawn('cat', [file])) as never)) as PortInfo[];
    assert.deepEqual(infos.map((i) => i.path).sort(), ['/dev/ttyACM0', '/dev/ttyS0', '/dev/ttyUSB0']);
    const out = listPorts('linux', infos, grants);
    assert.deepEqual(out[0], {
      path: '/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0',
      granted: true,
      alias: 'scale',
      listed: true,
      manufacturer: 'FTDI',
      serial_number: 'A50285BI',
      vendor_id: '0403',
      product_id: '6001',
      pnp_id: 'usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0',
    });
    assert.deepEqual(out[1], { path: '/tmp/ttyVirtual', granted: true, alias: 'sim', listed: false });
    // Ungranted ports: the path only, never their serial numbers.
    assert.deepEqual(out.slice(2), [
      { path: '/dev/ttyACM0', granted: false, listed: true },
      { path: '/dev/ttyS0', granted: false, listed: true },
    ]);
  });

  test('macOS: a /dev/cu.* grant names the /dev/tty.* port the bindings list', () => {
    const infos = JSON.parse(readFileSync(join(fixtures, 'list-darwin.json'), 'utf8')) as PortInfo[];
    const out = listPorts('darwin', infos, [{ path: '/dev/cu.usbserial-A50285BI', alias: 'scale' }]);
    assert.deepEqual(out[0], { path: '/dev/cu.usbserial-A50285BI', granted: true, alias: 'scale', listed: true, manufacturer: 'FTDI', serial_number: 'A50285BI', vendor_id: '0403', product_id: '6001', location_id: '14200000' });
    assert.deepEqual(out.slice(1).map((p) => [p.path, p.granted, p.manufacturer]), [
      ['/dev/tty.Bluetooth-Incoming-Port', false, undefined],
      ['/dev/tty.usbmodem1421', false, undefined],
    ]);
  });

  test('Windows: COM names match case-insensitively and with the \\\\.\\ prefix; serial numbers come from the pnpId', () => {
    // As WindowsBinding.list does: a serial number parsed from the pnpId when the driver gives none.
    const infos = (JSON.parse(readFileSync(join(fixtures, 'list-win32.json'), 'utf8')) as PortInfo[]).map((p) =>
      p.pnpId && !p.serialNumber && serialNumParser(p.pnpId) ? { ...p, serialNumber: serialNumParser(p.pnpId)! } : p,
    );
    const out = listPorts('win32', infos, [{ path: 'com3', alias: 'uno' }, { path: '\\\\.\\COM10' }]);
    assert.deepEqual(out.map((p) => [p.path, p.granted, p.alias, p.serial_number]), [
      ['com3', true, 'uno', '752303138333518011C1'],
      ['\\\\.\\COM10', true, undefined, 'A50285BI'],
      ['COM1', false, undefined, undefined],
    ]);
  });

  test('a * grant lists every port with its details', () => {
    const infos = JSON.parse(readFileSync(join(fixtures, 'list-darwin.json'), 'utf8')) as PortInfo[];
    const out = listPorts('darwin', infos, [{ path: '*' }]);
    assert.ok(out.every((p) => p.granted));
    assert.equal(out.find((p) => p.path === '/dev/tty.usbmodem1421')!.serial_number, '752303138333518011C1');
  });
});

describe('OS errors -> typed faults', () => {
  const cases: [NodeJS.Platform, string, 'open' | 'io' | 'signals', string, string][] = [
    ['linux', 'Error: No such file or directory, cannot open /dev/ttyUSB0', 'open', 'device_unavailable', 'unplugged'],
    ['linux', 'Error: Permission denied, cannot open /dev/ttyUSB0', 'open', 'permission_denied', 'os_refused'],
    ['linux', 'Error Resource temporarily unavailable Cannot lock port', 'open', 'device_busy', 'held_by_other_program'],
    ['darwin', 'Error: Resource busy, cannot open /dev/cu.usbserial', 'open', 'device_busy', 'held_by_other_program'],
    ['win32', 'Opening COM3: Access denied', 'open', 'device_busy', 'held_by_other_program'],
    ['win32', 'Opening COM9: File not found', 'open', 'device_unavailable', 'unplugged'],
    ['linux', 'EIO: i/o error, write', 'io', 'device_unavailable', 'unplugged'],
    ['linux', 'bad file descriptor', 'io', 'device_unavailable', 'unplugged'],
    ['linux', 'Error: Inappropriate ioctl for device, cannot get', 'signals', 'execution_failed', 'not_supported'],
    ['linux', 'Error baud rate of 12345 is not supported on your platform', 'open', 'invalid_arguments', 'bad_settings'],
  ];
  for (const [platform, msg, stage, type, reason] of cases) {
    test(`${platform} ${stage}: "${msg}" -> ${type}/${reason}`, () => {
      const f = faultFromOsError(new Error(msg), '/dev/x', stage, platform);
      assert.deepEqual([f.type, f.reason], [type, reason]);
      assert.equal(f.retryable, type === 'device_unavailable' || type === 'device_busy');
    });
  }
  test('the permission message carries the fix for the platform', () => {
    assert.match(faultFromOsError(new Error('Error: Permission denied, cannot open /dev/ttyUSB0'), '/dev/ttyUSB0', 'open', 'linux').message, /dialout/);
    assert.match(faultFromOsError(new Error('Error: Permission denied, cannot open /dev/cu.x'), '/dev/cu.x', 'open', 'darwin').message, /ls -l/);
  });
});

describe('grant kind (alias lookup itself is the kit\'s; see functions.test.ts)', () => {
  const ctx = { resolvePath: (p: string) => p };
  test('normal form keeps alias, ask and the port settings', () => {
    assert.deepEqual(serialGrants.normalize('/dev/ttyUSB1', ctx), { id: '/dev/ttyUSB1' });
    const g = serialGrants.normalize({ path: '/dev/ttyUSB0', alias: 'scale', baud: 2400, parity: 'even', ask: 'always' }, ctx);
    assert.deepEqual(g, { id: '/dev/ttyUSB0', alias: 'scale', ask: 'always', settings: { baud: 2400, parity: 'even' } });
    assert.deepEqual(grantSettings(g), { baud: 2400, parity: 'even' });
  });
  test('covers: * covers any port; COM names per platform', () => {
    assert.equal(coversPort('*', '/dev/ttyS0'), true);
    assert.equal(coversPort('/dev/ttyUSB0', '/dev/ttyUSB0', 'linux'), true);
    assert.equal(coversPort('/dev/ttyUSB0', '/dev/ttyUSB1', 'linux'), false);
    assert.equal(coversPort('COM3', 'com3', 'win32'), true);
    assert.equal(coversPort('COM3', '\\\\.\\COM3', 'win32'), true);
    assert.equal(coversPort('/dev/cu.usbserial-1', '/dev/tty.usbserial-1', 'darwin'), true);
    assert.equal(coversPort('COM3', 'com3', 'linux'), false);
  });
});

test('payloads: text, hex with separators, base64; malformed ones are refused', () => {
  assert.deepEqual([...payloadBytes({ hex: '02 57:03' })], [2, 0x57, 3]);
  assert.deepEqual([...payloadBytes({ base64: 'AAEC' })], [0, 1, 2]);
  assert.deepEqual([...payloadBytes({ text: 'é', encoding: 'latin1' })], [0xe9]);
  for (const bad of [{}, { hex: '0' }, { hex: 'zz' }, { base64: 'a' }, { text: 'a', hex: '00' }]) assert.throws(() => payloadBytes(bad), SerialFault, JSON.stringify(bad));
});

describe('modem lines (fake port: a pty has none)', () => {
  function fakePort() {
    const sets: SetFlags[] = [];
    const port: BindingPort = {
      isOpen: true,
      read: () => new Promise(() => {}),
      write: async () => {},
      set: async (f) => void sets.push({ ...f }),
      get: async () => ({ cts: true, dsr: false, dcd: true }),
      flush: async () => {},
      close: async () => {},
    };
    return { sets, link: new SerialLink(port, '/dev/fake', 'k') };
  }

  test('each change sends every line, keeping the others as last set', async () => {
    const { sets, link } = fakePort();
    await applySignals(link, { dtr: false }, new AbortController().signal);
    await applySignals(link, { rts: false }, new AbortController().signal);
    assert.deepEqual(sets, [
      { dtr: false, rts: true, brk: false },
      { dtr: false, rts: false, brk: false },
    ]);
    assert.deepEqual(await readSignals(link), { cts: true, dsr: false, dcd: true, set: { dtr: false, rts: false, brk: false } });
  });

  test('a timed break is released after its time, and also when the call is aborted during it', async () => {
    const { sets, link } = fakePort();
    const done = await applySignals(link, { break_ms: 20 }, new AbortController().signal);
    assert.equal(done.brk, false);
    assert.deepEqual(sets.map((s) => s.brk), [false, true, false]);
    const ac = new AbortController();
    const p = applySignals(link, { break_ms: 60_000 }, ac.signal);
    await new Promise((r) => setImmediate(r));
    ac.abort(new Error('cancelled'));
    await assert.rejects(p, /cancelled/);
    assert.equal(sets.at(-1)!.brk, false);
    assert.equal(link.lines.brk, false);
  });
});
