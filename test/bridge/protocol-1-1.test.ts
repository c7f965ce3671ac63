/**
 * Protocol 1.1 on the reference bridge (PROTOCOL.md §6.2 and "Changes"): the version negotiated in hello,
 * the states a 1.1 device sent no note for added to the call record from the outcome's timestamps and
 * marked derived, a 1.0 device served as before, and SSE events numbered 0, 1, 2, … with no back-dated
 * state. The device is a real WebSocket client speaking the protocol by hand (bench/sim-device.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { silentLogger } from '../../src/base/logger.js';
import { BridgeServer } from '../../src/bridge/server.js';
import { negotiateProtocolVersion } from '../../src/bridge/versions.js';
import type { CallRecord } from '../../src/bridge/store.js';
import type { Outcome } from '../../src/protocol/messages.js';
import { bridgeDoc, ids, tempDir, tokens, until } from '../helpers/stack.js';
import { echoOutcome, SimDevice, type SimDeviceOptions } from '../../bench/sim-device.js';
import { sseEvents, type SseEvent } from '../helpers/sse.js';

async function bridgeWith(device: Omit<SimDeviceOptions, 'url' | 'token' | 'identity'>) {
  const dir = tempDir();
  const t = tokens();
  const bridge = new BridgeServer(normalizeBridgeConfig(bridgeDoc(dir, t)), { log: silentLogger() });
  const url = await bridge.start();
  const sim = new SimDevice({ url: url.replace(/^http/, 'ws') + '/v1/device', token: t.device, identity: ids, ...device });
  const hello = await sim.connect();
  await until(() => bridge.store.getDevice(ids.workspace_id, ids.device_id)?.functions.length, 10_000, 'functions read');
  const post = async (body: Record<string, unknown>) => {
    const r = await fetch(`${url}/v1/calls`, { method: 'POST', headers: { authorization: `Bearer ${t.runtime}`, 'content-type': 'application/json' }, body: JSON.stringify({ workspace_id: ids.workspace_id, device_id: ids.device_id, function: 'diagnostics.echo', ...body }) });
    return { status: r.status, record: (await r.json()) as CallRecord };
  };
  const getCall = async (id: string) => (await (await fetch(`${url}/v1/calls/${id}`, { headers: { authorization: `Bearer ${t.runtime}` } })).json()) as CallRecord;
  const events = (id: string) => sseEvents(`${url}/v1/calls/${id}/events`, t.runtime);
  return {
    bridge, sim, hello, post, getCall, events,
    async stop() {
      sim.close();
      await bridge.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function assertStrictlyIncreasing(evs: SseEvent[]): void {
  evs.forEach((e, i) => {
    assert.equal(e.id, i, `event ${i} (${e.event}) has id ${e.id}`);
    if (e.event !== 'outcome') assert.equal(e.data['seq'], i, `event ${i} (${e.event}) carries seq ${String(e.data['seq'])}`);
  });
}

test('version negotiation: the highest version the bridge speaks that is not above the offer, same major', () => {
  assert.equal(negotiateProtocolVersion('1.1'), '1.1');
  assert.equal(negotiateProtocolVersion('1.0'), '1.0');
  assert.equal(negotiateProtocolVersion('1.7'), '1.2');
  assert.equal(negotiateProtocolVersion('1'), '1.0');
  assert.equal(negotiateProtocolVersion('1.2'), '1.2');
  assert.equal(negotiateProtocolVersion('2.0'), null);
  assert.equal(negotiateProtocolVersion('0.9'), null);
  assert.equal(negotiateProtocolVersion('one'), null);
  assert.equal(negotiateProtocolVersion(undefined), null);
});

test('a 1.1 device that sends only invoke responses: the record derives accepted and running from the outcome', async () => {
  const s = await bridgeWith({ protocolVersion: '1.1' });
  try {
    assert.equal(s.hello.protocol_version, '1.1', 'the bridge accepts 1.1');
    assert.equal(s.bridge.hub.get(ids.device_id, ids.workspace_id)?.protocolVersion, '1.1');
    const { status, record } = await s.post({ arguments: { value: 7 }, wait: true });
    assert.equal(status, 200);
    assert.equal(record.state, 'completed');
    const o = record.outcome!;
    assert.deepEqual(record.timeline.map((t) => [t.state, t.derived ?? false]), [['submitted', false], ['accepted', true], ['running', true], ['completed', false]]);
    assert.equal(record.timeline[1]!.at, o.accepted_at);
    assert.equal(record.timeline[2]!.at, o.started_at);
    assert.equal(record.timeline[3]!.at, o.finished_at);
    // What GET answers and what a restarted bridge would read: the derived states are kept.
    assert.deepEqual((await s.getCall(record.call_id)).timeline, record.timeline);
    assert.deepEqual(s.bridge.store.getCall(ids.workspace_id, record.call_id)?.timeline, record.timeline);
    // SSE never sends the derived (back-dated) states: the learned ones, then the terminal one and the outcome.
    const evs = await s.events(record.call_id).done;
    assert.deepEqual(evs.map((e) => [e.event, e.data['state']]), [['state', 'submitted'], ['state', 'completed'], ['outcome', 'completed']]);
    assertStrictlyIncreasing(evs);
  } finally {
    await s.stop();
  }
});

test('a 1.1 device that sends the running note of a slow call: that state is learned, only accepted is derived, SSE streams it live', async () => {
  let release!: () => void;
  const started = new Promise<void>((r) => (release = r));
  const s = await bridgeWith({
    protocolVersion: '1.1',
    async answer(p, d) {
      const accepted = new Date();
      const run = new Date(accepted.getTime() + 1);
      d.note(p.call_id, 'running', run);
      await started;
      return echoOutcome(p, accepted, run, new Date());
    },
  });
  try {
    const { status, record } = await s.post({ arguments: { value: 'slow' } });
    assert.equal(status, 202);
    await until(async () => (await s.getCall(record.call_id)).state === 'running', 10_000, 'running learned');
    const stream = s.events(record.call_id);
    await until(() => stream.events.length >= 2, 10_000, 'the replayed states');
    release();
    const evs = await stream.done;
    assert.deepEqual(evs.map((e) => [e.event, e.data['state'], e.data['replay'] ?? false]), [
      ['state', 'submitted', true], ['state', 'running', true], ['state', 'completed', false], ['outcome', 'completed', false],
    ]);
    assertStrictlyIncreasing(evs);
    const done = await s.getCall(record.call_id);
    assert.deepEqual(done.timeline.map((t) => [t.state, t.derived ?? false]), [['submitted', false], ['accepted', true], ['running', false], ['completed', false]]);
  } finally {
    release();
    await s.stop();
  }
});

test('SSE while a call runs: live notes and the outcome follow the replay, seq strictly increasing, device seq not reused', async () => {
  let finish!: (o: Outcome) => void;
  const s = await bridgeWith({
    protocolVersion: '1.1',
    answer: (p, d) =>
      new Promise<Outcome>((resolve) => {
        const accepted = new Date();
        finish = resolve;
        // Held back and sent as a slow call's would be: awaiting_confirmation (never dropped), then running.
        d.note(p.call_id, 'awaiting_confirmation', accepted);
        void until(() => stream?.events.length === 2, 10_000, 'two events').then(() => {
          const run = new Date();
          d.note(p.call_id, 'running', run);
          d.note(p.call_id, 'running', run); // a repeated note is not news
          void until(() => stream?.events.length === 3, 10_000, 'three events').then(() => finish(echoOutcome(p, accepted, run, new Date())));
        });
      }),
  });
  let stream: ReturnType<typeof s.events> | undefined;
  try {
    const { record } = await s.post({ arguments: { value: 1 } });
    stream = s.events(record.call_id);
    const evs = await stream.done;
    assert.deepEqual(evs.map((e) => [e.event, e.data['state']]), [
      ['state', 'submitted'], ['state', 'awaiting_confirmation'], ['state', 'running'], ['state', 'completed'], ['outcome', 'completed'],
    ]);
    assertStrictlyIncreasing(evs);
    const done = await s.getCall(record.call_id);
    assert.deepEqual(done.timeline.map((t) => [t.state, t.derived ?? false]), [
      ['submitted', false], ['accepted', true], ['awaiting_confirmation', false], ['running', false], ['completed', false],
    ]);
  } finally {
    await s.stop();
  }
});

test('a 1.0 device: the session speaks 1.0, its notes make the timeline, nothing is derived', async () => {
  const s = await bridgeWith({ protocolVersion: '1.0' });
  try {
    assert.equal(s.hello.protocol_version, '1.0', 'a 1.0 offer gets a 1.0 session');
    const { record } = await s.post({ arguments: { value: 'x' }, wait: true });
    assert.equal(record.state, 'completed');
    assert.deepEqual(record.timeline.map((t) => [t.state, t.derived ?? false]), [['submitted', false], ['accepted', false], ['running', false], ['completed', false]]);
    const evs = await s.events(record.call_id).done;
    assert.deepEqual(evs.map((e) => [e.event, e.data['state']]), [['state', 'submitted'], ['state', 'accepted'], ['state', 'running'], ['state', 'completed'], ['outcome', 'completed']]);
    assertStrictlyIncreasing(evs);
  } finally {
    await s.stop();
  }
});

test('a 1.0 device that skips its notes gets no derived states (1.0 requires every note; behaviour as before)', async () => {
  const s = await bridgeWith({ protocolVersion: '1.0', notes: 'none' });
  try {
    const { record } = await s.post({ arguments: { value: 'y' }, wait: true });
    assert.deepEqual(record.timeline.map((t) => t.state), ['submitted', 'completed']);
    assert.ok(record.timeline.every((t) => t.derived === undefined));
  } finally {
    await s.stop();
  }
});

test('a hello offering 2.0 is refused with the versions the bridge speaks; 1.5 gets a 1.2 session', async () => {
  const s = await bridgeWith({ protocolVersion: '1.5' });
  try {
    assert.equal(s.hello.protocol_version, '1.2');
    const t2 = new SimDevice({ ...s.sim.o, protocolVersion: '2.0' });
    const err = await t2.connect().then(() => null, (e: Error & { rpc?: { data?: { type?: string; details?: { supported?: string[] } } } }) => e);
    assert.equal(err?.rpc?.data?.type, 'unsupported_protocol_version');
    assert.deepEqual(err?.rpc?.data?.details?.supported, ['1.0', '1.1', '1.2']);
    t2.close();
  } finally {
    await s.stop();
  }
});
