/**
 * The serial port check's sysfs rules on this machine's real /dev/ttyS0 node with a sysfs tree written
 * by the test (what a machine with a UART, one without and a tty with no device behind it show), and
 * the controlling-terminal and device-number helpers. The whole path is tested through the agent in
 * test/security/serial-paths.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkPort, majorMinor } from '../engine/port-check.js';

/** A sysfs tree where /dev/ttyS0's device number leads to a tty `ttyS0` with or without a device and a type. */
function sysfs(opts: { device: boolean; type?: string }): string {
  const root = mkdtempSync(join(tmpdir(), 'aios-sysfs-'));
  const [major, minor] = majorMinor(statSync('/dev/ttyS0').rdev);
  const tty = join(root, 'devices', 'platform', 'serial8250', 'tty', 'ttyS0');
  mkdirSync(tty, { recursive: true });
  if (opts.device) mkdirSync(join(root, 'devices', 'platform', 'serial8250', 'tty', 'ttyS0', 'device'));
  if (opts.type !== undefined) writeFileSync(join(tty, 'type'), `${opts.type}\n`);
  mkdirSync(join(root, 'dev', 'char'), { recursive: true });
  symlinkSync(tty, join(root, 'dev', 'char', `${major}:${minor}`));
  return root;
}

const uart = existsSync('/dev/ttyS0') && statSync('/dev/ttyS0').isCharacterDevice();

test('under *: a ttyS port with a UART is covered; type 0 (no UART) and no device behind it are not', { skip: !uart && 'no /dev/ttyS0 here' }, async () => {
  const roots = [sysfs({ device: true, type: '4' }), sysfs({ device: true, type: '0' }), sysfs({ device: false })];
  try {
    const [withUart, noUart, noDevice] = await Promise.all(roots.map((sys) => checkPort('/dev/ttyS0', false, { platform: 'linux', sys })));
    assert.equal(withUart, undefined);
    assert.equal(noUart?.rule, 'not_a_listed_port');
    assert.equal(noDevice?.rule, 'not_a_listed_port');
    // An explicit grant of the same node is a tty the kernel lists: covered without opening it.
    assert.equal(await checkPort('/dev/ttyS0', true, { platform: 'linux', sys: roots[1]! }), undefined);
  } finally {
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  }
});

test('/dev/tty is refused even when granted by name', async () => {
  const r = await checkPort('/dev/tty', true, { platform: 'linux', sys: '/sys' });
  assert.equal(r?.rule, 'controlling_terminal');
});

test('Windows: COM ports only; an explicit grant may name a device-namespace port', async () => {
  const env = { platform: 'win32' as const, sys: '', list: () => Promise.resolve([{ path: 'COM3' }]) };
  assert.equal(await checkPort('COM3', false, env), undefined);
  assert.equal((await checkPort('COM4', false, env))?.rule, 'not_a_listed_port');
  assert.equal((await checkPort('C:\\Users\\me\\notes.txt', true, env))?.rule, 'not_a_character_device');
  assert.equal(await checkPort('\\\\.\\CNCA0', true, env), undefined);
});

test('device numbers split the way glibc does', () => {
  assert.deepEqual(majorMinor((4 << 8) | 64), [4, 64]);
  assert.deepEqual(majorMinor(statSync('/dev/null').rdev), [1, 3]);
});
