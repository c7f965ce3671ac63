/**
 * Issue 27, finding 7: a timer longer than Node's 2^31 − 1 ms does not wait, it fires after 1 ms. The
 * attack: a device publishes a descriptor whose `timeout_ms_default` is above 2^31 ms; a runtime calls it
 * without its own `timeout_ms`; the old bridge armed its deadline with that sum, the timer fired at once,
 * and the call was cancelled on the device and failed as `timeout` moments after it was sent. Now every
 * timer whose delay comes from outside goes through `clampTimerMs` (src/base/timers.ts), and the bridge
 * caps a device's default like a runtime's own `timeout_ms`.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { clampTimerMs, MAX_TIMER_MS } from '../../src/base/timers.js';
import { silentLogger } from '../../src/base/logger.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { BridgeServer } from '../../src/bridge/server.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { MAX_TIME_PARAM_MS, type Outcome } from '../../src/protocol/messages.js';
import { bridgeDoc, ids, tempDir, tokens, until } from '../helpers/stack.js';
import { RogueDevice } from './helpers.js';

test('clampTimerMs keeps a delay within what a Node timer holds', () => {
  assert.equal(MAX_TIMER_MS, 2 ** 31 - 1);
  assert.equal(clampTimerMs(2 ** 31 + 5), MAX_TIMER_MS);
  assert.equal(clampTimerMs(Number.MAX_SAFE_INTEGER), MAX_TIMER_MS);
  assert.equal(clampTimerMs(Infinity), MAX_TIMER_MS);
  assert.equal(clampTimerMs(1500), 1500);
  assert.equal(clampTimerMs(-3), 0);
  assert.equal(clampTimerMs(NaN), 0);
});

test('a device whose timeout_ms_default is above 2^31 ms: the call is sent and waits, no deadline fires at once', async () => {
  const dir = tempDir();
  const t = tokens();
  const bridge = new BridgeServer(normalizeBridgeConfig(bridgeDoc(dir, t)), { log: silentLogger() });
  let rogue: RogueDevice | undefined;
  try {
    const url = await bridge.start();
    const huge = 2 ** 31 + 10_000;
    rogue = await RogueDevice.connect(url, t.device, ids, {
      functionList: () => ({
        functions: [{ id: 'slow.job', name: 'Slow job', description: 'Takes as long as it says', input_schema: { type: 'object' }, timeout_ms_default: huge, timeout_ms_max: huge, risk: 'low' }],
        revision: 1,
      }),
    });
    // The device holds the call: it neither answers the invoke nor finishes.
    rogue.answer = (method, p) => (method === 'aios/function.invoke' ? (new Promise<Outcome>(() => undefined) as unknown as Outcome) : ({ call_id: p.call_id } as unknown as Outcome));
    const client = new RuntimeClient({ bridge_url: url, token: t.runtime, workspace_id: ids.workspace_id, device_id: ids.device_id });
    await until(async () => ((await client.device(ids.device_id))['functions'] as unknown[]).length === 1, 10_000, 'the list stored');
    const submitted = await client.call('slow.job', {}, { wait: false });
    assert.equal(submitted.status, 202);
    const callId = submitted.record.call_id;
    await until(async () => rogue!.invokes.length === 1 || (await client.getCall(callId)).outcome, 10_000, 'the invoke to reach the device');
    const early = (await client.getCall(callId)).outcome;
    assert.equal(early, undefined, `the call ended at once: ${JSON.stringify(early?.error)}`);
    assert.ok((rogue.invokes[0]!['timeout_ms'] as number) <= MAX_TIME_PARAM_MS, 'the device default is capped like a runtime timeout_ms');
    // Round trips through the bridge: an overflowed timer (1 ms) would have fired by the end of them.
    for (let i = 0; i < 5; i++) assert.equal((await client.getCall(callId)).outcome, undefined);
    assert.equal(rogue.cancels.length, 0, 'the bridge sent no deadline cancel');
    const rec = await client.getCall(callId);
    assert.ok(rec.state === 'submitted' || rec.state === 'accepted' || rec.state === 'running', `state ${rec.state}`);
  } finally {
    rogue?.close();
    await bridge.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
