/**
 * optionalNative with real modules: a package that is not installed, @abandonware/noble (which throws
 * EAFNOSUPPORT when it loads on a machine without Bluetooth sockets, as on the CI machines), and real
 * module files that fail the way the OS fails (EACCES) or that miss a dependency.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { optionalNative } from '../../src/sdk/index.js';
import { WireError } from '../../src/protocol/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'aios-native-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function failure(p: Promise<unknown>): Promise<WireError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof WireError, `a WireError, not ${String(e)}`);
    return e;
  }
  assert.fail('expected the import to fail');
}

test('a package that is not installed: device_unavailable, reason not_installed, says how to install it', async () => {
  const e = await failure(optionalNative('aios-no-such-package-xyz', { feature: 'Frobnication' }));
  assert.equal(e.type, 'device_unavailable');
  assert.equal(e.details?.['reason'], 'not_installed');
  assert.equal(e.details?.['module'], 'aios-no-such-package-xyz');
  assert.match(e.message, /Frobnication is not available/);
  assert.match(e.message, /npm install aios-no-such-package-xyz/);
  assert.equal(e.sideEffects, 'none');
});

test('@abandonware/noble on a machine without Bluetooth sockets: device_unavailable, reason no_adapter', async (t) => {
  let loadsHere = false;
  await import('@abandonware/noble').then(() => (loadsHere = true), () => undefined);
  if (loadsHere) return t.skip('noble loads on this machine (it has Bluetooth sockets); the no_adapter path is not reachable here');
  const e = await failure(optionalNative('@abandonware/noble', { feature: 'Bluetooth' }));
  assert.equal(e.type, 'device_unavailable');
  assert.equal(e.details?.['reason'], 'no_adapter');
  assert.equal(e.details?.['code'], 'EAFNOSUPPORT');
  assert.match(e.message, /no Bluetooth hardware/);
});

test('the OS refusing access while the module loads: permission_denied, reason os_refused, with the fix', async () => {
  const file = join(dir, 'refused.mjs');
  writeFileSync(file, "const e = new Error('EACCES: permission denied, open /dev/hidraw0'); e.code = 'EACCES'; throw e;\n");
  const e = await failure(optionalNative(pathToFileURL(file).href, { feature: 'the USB scale' }));
  assert.equal(e.type, 'permission_denied');
  assert.equal(e.details?.['reason'], 'os_refused');
  assert.match(e.message, /refused access to the USB scale \(EACCES\)/);
  assert.match(e.message, /system settings/);
});

test('a module whose own dependency is missing is a broken install (load_failed), not "not installed"', async () => {
  const file = join(dir, 'broken.mjs');
  writeFileSync(file, "import 'aios-missing-dependency-abc';\nexport const x = 1;\n");
  const e = await failure(optionalNative(pathToFileURL(file).href, { feature: 'Printing' }));
  assert.equal(e.type, 'device_unavailable');
  assert.equal(e.details?.['reason'], 'load_failed');
});

test('loaded once and cached; typed from the import without casts; platforms and classify options', async () => {
  const file = join(dir, 'counter.mjs');
  writeFileSync(file, 'globalThis.__aiosLoads = (globalThis.__aiosLoads ?? 0) + 1;\nexport const answer = 42;\n');
  let loads = 0;
  const load = () => {
    loads++;
    return import(pathToFileURL(file).href) as Promise<{ answer: number }>;
  };
  const a = await optionalNative('counter-module', { feature: 'Counting', load });
  const b = await optionalNative('counter-module', { feature: 'Counting', load });
  assert.equal(a.answer, 42);
  assert.equal(a, b);
  assert.equal(loads, 1, 'the import ran once');
  const other = process.platform === 'win32' ? 'darwin' : 'win32';
  const e = await failure(optionalNative('counter-module-2', { feature: 'Counting', platforms: [other] }));
  assert.equal(e.details?.['reason'], 'unsupported_platform');
  const c = await failure(optionalNative('aios-no-such-package-xyz', { feature: 'X', classify: () => 'no_adapter' }));
  assert.equal(c.details?.['reason'], 'no_adapter');
});
