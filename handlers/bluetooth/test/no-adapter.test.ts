/**
 * On this machine itself, which has no Bluetooth in the kernel (`require('@abandonware/noble')` throws
 * EAFNOSUPPORT): a CLI-started agent starts, lists the bluetooth functions, answers bluetooth.state with
 * `present: false, reason: no_adapter`, and fails the other calls with device_unavailable/no_adapter.
 * No simulator here (noble's default binding), so this file may run alongside others.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { processStack, until } from '../../../test/helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;
let s: Stack;

const nobleLoads = (() => {
  try {
    createRequire(import.meta.url)('@abandonware/noble');
    return true;
  } catch {
    return false;
  }
})();

before(async () => {
  s = await processStack({ agent: { grants: { bluetooth: ['*'] }, confirmations: { provider: 'none' } } });
});
after(() => s.stop());

test('the agent lists every bluetooth function although noble cannot load', async () => {
  // The bridge reads the device's functions after its hello: wait for them rather than race it.
  const fns = await until(async () => {
    const d = await s.client.device('dev_t');
    const ids = ((d['functions'] as { id: string }[] | undefined) ?? []).map((f) => f.id).filter((id) => id.startsWith('bluetooth.'));
    return ids.length ? ids : undefined;
  }, 30_000, 'the bluetooth functions listed by the bridge');
  assert.deepEqual(fns!.sort(), ['bluetooth.disconnect', 'bluetooth.read', 'bluetooth.scan', 'bluetooth.services', 'bluetooth.state', 'bluetooth.subscribe', 'bluetooth.write']);
});

test('bluetooth.state: present false, reason no_adapter, with advice (an answer, not an error)', { skip: nobleLoads && 'noble loads on this machine: it has Bluetooth' }, async () => {
  const o = (await s.client.call('bluetooth.state', {})).record.outcome!;
  assert.equal(o.state, 'completed', JSON.stringify(o.error));
  const out = o.output as Record<string, unknown>;
  assert.equal(out['present'], false);
  assert.equal(out['powered'], false);
  assert.equal(out['reason'], 'no_adapter');
  assert.match(String(out['advice']), /no Bluetooth adapter/);
});

test('read, scan and services fail device_unavailable/no_adapter, and the agent keeps serving', { skip: nobleLoads && 'noble loads on this machine: it has Bluetooth' }, async () => {
  for (const [fn, args] of [
    ['bluetooth.read', { device: 'aa:bb:cc:dd:ee:ff', service: '181a', characteristic: '2a6e' }],
    ['bluetooth.scan', { duration_ms: 500 }],
    ['bluetooth.services', { device: 'aa:bb:cc:dd:ee:ff' }],
  ] as const) {
    const o = (await s.client.call(fn, args)).record.outcome!;
    assert.equal(o.state, 'failed', fn);
    assert.equal(o.error?.type, 'device_unavailable', fn);
    assert.equal((o.error?.details as { reason?: string } | undefined)?.reason, 'no_adapter', fn);
    assert.equal(o.error?.retryable, true, fn);
  }
  const again = (await s.client.call('bluetooth.state', {})).record.outcome!;
  assert.equal(again.state, 'completed');
  assert.equal(s.agent.child.exitCode, null, 'the agent is still running');
});
