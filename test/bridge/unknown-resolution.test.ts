/**
 * Protocol 1.2 §6.4/§6.8 on the reference bridge, against simulated devices on a real WebSocket: what the
 * bridge ends a call with when it gives up (`unknown`, or `expired/device_offline` when the invoke never
 * reached a live session), how the device's own outcome resolves its `unknown` once (a late invoke response
 * on the open session; `call.get` after a reconnect, across a bridge restart), and that a device outcome for
 * a call the bridge ended any other way is kept beside it and changes nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { silentLogger } from '../../src/base/logger.js';
import { BridgeServer } from '../../src/bridge/server.js';
import { BridgeStore, type StoredCall } from '../../src/bridge/store.js';
import type { InvokeParams, Outcome } from '../../src/protocol/messages.js';
import { bridgeDoc, ids, tempDir, tokens, until } from '../helpers/stack.js';
import { sseEvents } from '../helpers/sse.js';
import { echoOutcome, SimDevice } from '../../bench/sim-device.js';
import { slow } from '../helpers/wait.js';

type Rec = {
  state: string;
  outcome?: Outcome;
  timeline: { state?: string; event?: string; at: string }[];
  resolved_from?: { state: string; at: string };
  device_outcome?: Outcome;
};

async function setup(opts: { resolveWindowMs?: number } = {}) {
  const dir = tempDir();
  const t = tokens();
  const cfg = normalizeBridgeConfig(bridgeDoc(dir, t));
  const s = {
    dir,
    t,
    cfg,
    bridge: new BridgeServer(cfg, { log: silentLogger(), ...opts }),
    url: '',
    async restart() {
      const port = Number(new URL(s.url).port);
      await s.bridge.stop();
      s.bridge = new BridgeServer(normalizeBridgeConfig(bridgeDoc(dir, t, { listen: { host: '127.0.0.1', port } })), { log: silentLogger(), ...opts });
      s.url = await s.bridge.start();
    },
    sim(answer?: (p: InvokeParams) => Promise<Outcome> | Outcome) {
      return new SimDevice({ url: s.url.replace(/^http/, 'ws') + '/v1/device', token: t.device, identity: ids, protocolVersion: '1.2', ...(answer ? { answer } : {}) });
    },
    async post(body: Record<string, unknown>): Promise<{ status: number; rec: Rec & { call_id: string } }> {
      const r = await fetch(`${s.url}/v1/calls`, { method: 'POST', headers: { authorization: `Bearer ${t.runtime}`, 'content-type': 'application/json' }, body: JSON.stringify({ workspace_id: ids.workspace_id, device_id: ids.device_id, function: 'diagnostics.echo', arguments: { value: 1 }, ...body }) });
      return { status: r.status, rec: (await r.json()) as Rec & { call_id: string } };
    },
    async get(id: string): Promise<Rec> {
      const r = await fetch(`${s.url}/v1/calls/${id}`, { headers: { authorization: `Bearer ${t.runtime}` } });
      return (await r.json()) as Rec;
    },
    async stop() {
      await s.bridge.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  s.url = await s.bridge.start();
  return s;
}

/** An invoke answer the test releases when it likes (the device "runs" until then). */
function held() {
  let release!: (o: Outcome) => void;
  let params: InvokeParams | undefined;
  const answer = (p: InvokeParams) => {
    params = p;
    return new Promise<Outcome>((r) => (release = r));
  };
  return { answer, release: (f: (p: InvokeParams) => Outcome) => release(f(params!)), started: () => params !== undefined };
}

test('alive but silent: unknown/timeout (source bridge); the late invoke response on the same session resolves it once (SSE resolved); a restart keeps it', async () => {
  const s = await setup();
  const h = held();
  const sim = s.sim(h.answer);
  try {
    await sim.connect();
    const { status, rec } = await s.post({ timeout_ms: 100, confirm_timeout_ms: 1, wait: true });
    assert.equal(status, 200, JSON.stringify(rec));
    assert.equal(rec.state, 'unknown');
    assert.equal(rec.outcome?.error?.type, 'timeout');
    assert.equal(rec.outcome?.error?.side_effects, 'possible');
    assert.equal(rec.outcome?.error?.details?.['source'], 'bridge');
    const stream = sseEvents(`${s.url}/v1/calls/${rec.call_id}/events`, s.t.runtime);
    await until(() => stream.events.some((e) => e.event === 'outcome'), 5000, 'the replayed outcome');
    const now = new Date();
    h.release((p) => echoOutcome(p, now, now, now));
    const events = await stream.done;
    assert.equal(events.at(-1)?.event, 'resolved', events.map((e) => e.event).join(','));
    assert.equal((events.at(-1)!.data['outcome'] as Outcome).state, 'completed');
    const got = await s.get(rec.call_id);
    assert.equal(got!.state, 'completed');
    assert.equal(got.outcome?.state, 'completed');
    assert.equal(got!.resolved_from?.state, 'unknown');
    // Once: a later device outcome (a report of something else) changes nothing.
    const ack = await sim.report([{ ...echoOutcome({ call_id: rec.call_id, function: 'diagnostics.echo', arguments: {} } as unknown as InvokeParams, now, now, now), state: 'failed', output: undefined, error: { code: -32000, type: 'execution_failed', message: 'x', retryable: false, side_effects: 'none' } } as unknown as Outcome]);
    assert.deepEqual(ack.accepted, [rec.call_id]);
    assert.equal((await s.get(rec.call_id)).state, 'completed');
    sim.close();
    await s.restart();
    const kept = await s.get(rec.call_id);
    assert.equal(kept.state, 'completed');
    assert.equal(kept.resolved_from?.state, 'unknown');
    // A replayed stream of a resolved call: up to its unknown, then `resolved`, then the end.
    const replay = await sseEvents(`${s.url}/v1/calls/${rec.call_id}/events`, s.t.runtime).done;
    assert.deepEqual(replay.slice(-2).map((e) => [e.event, e.data['state']]), [['state', 'unknown'], ['resolved', 'completed']]);
  } finally {
    sim.close();
    await s.stop();
  }
});

test('session gone: device_offline in the timeline at once, unknown/device_offline at the deadline; after a bridge restart and the reconnect, call.get resolves it', async () => {
  const s = await setup();
  const h = held();
  const sim = s.sim(h.answer);
  try {
    await sim.connect();
    const { rec } = await s.post({ timeout_ms: 100, confirm_timeout_ms: 1, wait: false });
    await until(() => h.started(), 5000, 'the invoke reached the device');
    const stream = sseEvents(`${s.url}/v1/calls/${rec.call_id}/events`, s.t.runtime);
    sim.close(true);
    await until(async () => (await s.get(rec.call_id)).timeline.some((t) => t.event === 'device_offline'), 5000, 'device_offline recorded');
    await until(() => stream.events.some((e) => e.event === 'device_offline'), 5000, 'device_offline on SSE');
    const ended = await until(async () => {
      const r = await s.get(rec.call_id);
      return r.outcome ? r : undefined;
    }, 15_000, 'the bridge gives up');
    assert.equal(ended!.state, 'unknown');
    assert.equal(ended!.outcome?.error?.type, 'device_offline');
    assert.equal(ended!.outcome?.error?.details?.['source'], 'bridge');
    stream.close();
    // The device finishes while it is away (its journal has the outcome), the bridge restarts, the device comes back.
    const now = new Date();
    h.release((p) => echoOutcome(p, now, now, now));
    await s.restart();
    await sim.connect();
    const got = await until(async () => {
      const r = await s.get(rec.call_id);
      return r.resolved_from ? r : undefined;
    }, 10_000, 'resolved by call.get');
    assert.equal(got!.state, 'completed');
    assert.equal(got!.resolved_from?.state, 'unknown');
    assert.ok(got!.timeline.some((t) => t.event === 'device_offline'), 'the event survived the restart');
  } finally {
    sim.close();
    await s.stop();
  }
});

test('an invoke never written to a live session ends expired/device_offline, side_effects none; a later device outcome is kept beside and changes nothing', async () => {
  const s = await setup();
  const sim = s.sim();
  try {
    await sim.connect();
    await until(() => s.bridge.store.getDevice(ids.workspace_id, ids.device_id), 5000, 'device known');
    sim.close();
    await s.bridge.stop();
    // A call the bridge took but never forwarded (it stopped first), its deadline gone.
    const store = new BridgeStore(join(s.cfg.data_dir, 'bridge.sqlite'));
    const at = new Date().toISOString();
    const call: StoredCall = {
      call_id: 'never-sent-1', workspace_id: ids.workspace_id, device_id: ids.device_id, function: 'diagnostics.echo', state: 'submitted', created_at: at, updated_at: at,
      timeline: [{ state: 'submitted', at }], args_digest: 'x', deadline_ms: Date.now() - 1, bridge_outcome: false, sent: false,
      params: { call_id: 'never-sent-1', function: 'diagnostics.echo', arguments: { value: 1 }, workspace_id: ids.workspace_id, user_id: ids.user_id, device_id: ids.device_id, timeout_ms: 100, attempt: 1 },
    };
    store.insertCall(call);
    store.close();
    await s.restart();
    const ended = await until(async () => {
      const r = await s.get('never-sent-1');
      return r.outcome ? r : undefined;
    }, 10_000, 'expired at the deadline');
    assert.equal(ended!.state, 'expired');
    assert.equal(ended!.outcome?.error?.type, 'device_offline');
    assert.equal(ended!.outcome?.error?.side_effects, 'none');
    await sim.connect();
    const now = new Date();
    await sim.report([echoOutcome(call.params, now, now, now)]);
    const after = await s.get('never-sent-1');
    assert.equal(after.state, 'expired', 'not resolved: only the bridge\'s unknown is');
    assert.equal(after.resolved_from, undefined);
    assert.equal(after.device_outcome?.state, 'completed');
  } finally {
    sim.close();
    await s.stop();
  }
});

test('an events stream waiting for the device to resolve the bridge\'s unknown ends when the resolution window closes, live and replayed', { timeout: slow(60_000) }, async () => {
  const s = await setup({ resolveWindowMs: 1500 });
  const h = held();
  const sim = s.sim(h.answer);
  try {
    await sim.connect();
    const { rec } = await s.post({ timeout_ms: 100, confirm_timeout_ms: 1, wait: false });
    // Live: the stream opened before the bridge gave up sees the unknown, stays for a resolution, then ends.
    const live = sseEvents(`${s.url}/v1/calls/${rec.call_id}/events`, s.t.runtime);
    const events = await live.done;
    const outcome = events.find((e) => e.event === 'outcome');
    assert.equal(outcome?.data['state'], 'unknown', events.map((e) => e.event).join(','));
    assert.equal(events.at(-1)?.event, 'outcome', 'no resolved event: the window closed');
    const got = await s.get(rec.call_id);
    assert.equal(got.state, 'unknown');
    assert.ok(Date.now() >= Date.parse((got as unknown as { updated_at: string }).updated_at) + 1500, 'ended no earlier than the window');
    // Replayed after the window: the whole story, then the end at once.
    const replay = await sseEvents(`${s.url}/v1/calls/${rec.call_id}/events`, s.t.runtime).done;
    assert.deepEqual(replay.slice(-2).map((e) => e.event), ['state', 'outcome']);
  } finally {
    sim.close();
    await s.stop();
  }
});
