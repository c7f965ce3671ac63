/**
 * Protocol 1.2 §6.4/§6.8 end to end, through CLI-started bridge and agent processes: what the runtime is
 * told when the device drops or goes silent during a call (`device_offline`/`device_online` events, the
 * bridge's `unknown` at its deadline) and how the device's own outcome resolves that `unknown` once
 * (`resolved_from`, SSE `resolved`), checked against what the device journalled (its audit trail).
 * The agent is paused with SIGSTOP: its session holds while the bridge's heartbeat (3 × heartbeat_ms) does.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cli, cliRun, processStack, until, type Proc } from '../helpers/stack.js';
import { sseEvents } from '../helpers/sse.js';

type Stack = Awaited<ReturnType<typeof processStack>>;
interface Entry { state?: string; event?: string; at: string }
interface Rec {
  call_id: string;
  state: string;
  timeline: Entry[];
  outcome?: { state: string; error?: { type: string; side_effects?: string; details?: Record<string, unknown> } | null };
  resolved_from?: { state: string; at: string };
}

function invoke(s: Stack, args: string[]): Proc {
  return cli(['invoke', ...args, '--json', '--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t']);
}

/** The call's record as GET /v1/calls/<id> answers it. */
async function getCall(s: Stack, id: string): Promise<Rec> {
  return (await s.client.getCall(id)) as unknown as Rec;
}

/** Starts `invoke` with a call id and waits until the bridge has it running on the device. */
async function invokeRunning(s: Stack, id: string, args: string[]): Promise<Proc> {
  const p = invoke(s, ['--call-id', id, ...args]);
  await until(async () => {
    const r = await s.client.getCall(id).catch(() => undefined);
    return r?.state === 'running';
  }, 20_000, 'the call running');
  return p;
}

/** The device's own audit row for a call (`activity --json`): what it journalled. */
async function deviceRow(s: Stack, id: string): Promise<{ state: string; error_type: string | null }> {
  const row = await until(async () => {
    const r = await cliRun(['activity', '--json', '--data-dir', join(s.dir, 'agent')]);
    const rows = r.code === 0 ? (JSON.parse(r.out) as { call_id: string; state: string; error_type: string | null }[]) : [];
    return rows.find((x) => x.call_id === id);
  }, 20_000, `the device's audit row of ${id}`);
  return row!;
}

const sse = (s: Stack, id: string) => sseEvents(`${s.url}/v1/calls/${id}/events`, s.tokens.runtime);

describe('heartbeat 1 s: the session drops while the agent is stopped', () => {
  let s: Stack;
  before(async () => {
    s = await processStack({ bridge: { heartbeat_ms: 1000 } });
  });
  after(async () => {
    s.agent.child.kill('SIGCONT');
    await s.stop();
  });

  test('back before the deadline: device_offline then device_online in the timeline and on SSE, then the real outcome (no unknown)', async () => {
    const id = 'back-before-1';
    const p = await invokeRunning(s, id, ['diagnostics.wait', '--args', '{"ms":2500}', '--timeout-ms', '60000']);
    const stream = sse(s, id);
    s.agent.child.kill('SIGSTOP');
    try {
      await until(async () => (await getCall(s, id)).timeline.some((t) => t.event === 'device_offline'), 20_000, 'device_offline recorded');
      await until(() => stream.events.some((e) => e.event === 'device_offline'), 5000, 'device_offline on SSE');
    } finally {
      s.agent.child.kill('SIGCONT');
    }
    assert.equal(await p.exited, 0, p.err);
    const rec = JSON.parse(p.out) as Rec;
    assert.equal(rec.outcome?.state, 'completed');
    assert.equal(rec.resolved_from, undefined);
    const events = (await stream.done).map((e) => e.event);
    assert.ok(events.indexOf('device_offline') < events.indexOf('device_online'), events.join(','));
    assert.ok(!events.includes('resolved'), events.join(','));
    const got = await getCall(s, id);
    const names = got.timeline.map((t) => t.event ?? t.state);
    assert.ok(names.indexOf('device_offline') < names.indexOf('device_online') && names.indexOf('device_online') < names.indexOf('completed'), names.join(','));
    assert.ok(!names.includes('unknown'), names.join(','));
    assert.equal((await deviceRow(s, id)).state, 'completed');
  });

  test('stopped past the deadline: unknown/device_offline (source bridge, exit 5), resolved after it reconnects to what the device journalled', async () => {
    const id = 'back-after-1';
    const p = await invokeRunning(s, id, ['diagnostics.wait', '--args', '{"ms":2000}', '--timeout-ms', '3000', '--confirm-timeout-ms', '1000']);
    const stream = sse(s, id);
    s.agent.child.kill('SIGSTOP');
    let rec: Rec;
    try {
      assert.equal(await p.exited, 5, p.err + p.out);
      rec = JSON.parse(p.out) as Rec;
    } finally {
      s.agent.child.kill('SIGCONT');
    }
    assert.equal(rec.outcome?.state, 'unknown');
    assert.equal(rec.outcome?.error?.type, 'device_offline');
    assert.equal(rec.outcome?.error?.side_effects, 'possible');
    assert.equal(rec.outcome?.error?.details?.['source'], 'bridge');
    assert.ok(rec.timeline.some((t) => t.event === 'device_offline'), JSON.stringify(rec.timeline));
    const events = await stream.done; // the stream stays open until the device's outcome resolves the unknown
    const names = events.map((e) => e.event);
    assert.deepEqual(names.slice(-3), ['state', 'outcome', 'resolved'], names.join(','));
    const resolved = events.at(-1)!.data as { state: string; resolved_from: { state: string } };
    assert.equal(resolved.resolved_from.state, 'unknown');
    const device = await deviceRow(s, id);
    const got = await getCall(s, id);
    assert.equal(got.state, device.state, 'the bridge converged to the device journal');
    assert.equal(got.outcome?.state, device.state);
    assert.equal(got.outcome?.error?.type ?? null, device.error_type);
    assert.equal(got.resolved_from?.state, 'unknown');
    assert.equal(resolved.state, device.state);
    assert.ok(got.timeline.some((t) => t.state === 'unknown'), 'the timeline keeps the unknown it replaced');
  });
});

describe('heartbeat 10 s: the deadline passes while the session still holds', () => {
  let s: Stack;
  before(async () => {
    s = await processStack({ bridge: { heartbeat_ms: 10_000 } });
  });
  after(async () => {
    s.agent.child.kill('SIGCONT');
    await s.stop();
  });

  test('unknown/timeout (source bridge, exit 5), then resolved after SIGCONT by the late answer on the same session', async () => {
    const id = 'silent-1';
    const p = await invokeRunning(s, id, ['diagnostics.wait', '--args', '{"ms":2000}', '--timeout-ms', '3000', '--confirm-timeout-ms', '1000']);
    const stream = sse(s, id);
    s.agent.child.kill('SIGSTOP');
    let rec: Rec;
    try {
      assert.equal(await p.exited, 5, p.err + p.out);
      rec = JSON.parse(p.out) as Rec;
      assert.ok(s.agent.child.signalCode === null && (await s.client.device('dev_t'))['online'] === true, 'the session still held at the verdict');
    } finally {
      s.agent.child.kill('SIGCONT');
    }
    assert.equal(rec.outcome?.state, 'unknown');
    assert.equal(rec.outcome?.error?.type, 'timeout');
    assert.equal(rec.outcome?.error?.details?.['source'], 'bridge');
    assert.ok(!rec.timeline.some((t) => t.event === 'device_offline'), JSON.stringify(rec.timeline));
    const events = await stream.done;
    assert.equal(events.at(-1)?.event, 'resolved');
    const device = await deviceRow(s, id);
    const got = await getCall(s, id);
    assert.equal(got.state, device.state);
    assert.equal(got.outcome?.error?.type ?? null, device.error_type);
    assert.equal(got.resolved_from?.state, 'unknown');
    // Resolved once: asking again changes nothing, and the device ran it once.
    const again = await cliRun(['invoke', 'diagnostics.wait', '--args', '{"ms":2000}', '--call-id', id, '--json', '--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t']);
    assert.equal((JSON.parse(again.out) as Rec).state, device.state);
  });
});
