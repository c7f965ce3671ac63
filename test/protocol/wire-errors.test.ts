/**
 * Every error type the spine can produce, produced for real: a real bridge and a real agent over a real
 * WebSocket on loopback, called through the bridge's HTTP API (or, for device-level checks, by sending
 * the JSON-RPC request on the live device socket).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { v7 as uuidv7 } from 'uuid';
import { inProcessStack, ids, until } from '../helpers/stack.js';
import { BridgeHttpError } from '../../src/runtime-client/client.js';
import { METHODS, SUBPROTOCOL, type Outcome } from '../../src/protocol/messages.js';

type Stack = Awaited<ReturnType<typeof inProcessStack>>;

async function httpError(p: Promise<unknown>): Promise<BridgeHttpError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof BridgeHttpError) return e;
    throw e;
  }
  assert.fail('expected the bridge to refuse the request');
}

/** Sends a raw invoke on the device's live session (as the bridge would). */
function invokeRaw(s: Stack, params: Record<string, unknown>): Promise<Outcome> {
  const conn = s.bridge.hub.get(ids.device_id);
  assert.ok(conn, 'device is connected');
  return conn.peer.request<Outcome>(METHODS.invoke, { ...ids, arguments: {}, ...params }, 20_000);
}

describe('call errors over the real path', () => {
  let s: Stack;
  before(async () => {
    s = await inProcessStack();
  });
  after(() => s.stop());

  test('device.info completes with a valid output', async () => {
    const { status, record } = await s.client.call('device.info', {});
    assert.equal(status, 200);
    assert.equal(record.outcome?.state, 'completed');
    assert.equal(record.outcome?.output_valid, true);
    assert.ok(((record.outcome?.output as { functions: string[] }).functions).includes('device.info'));
  });

  test('unknown_function', async () => {
    const { record } = await s.client.call('nope.nothing', {});
    assert.equal(record.outcome?.state, 'failed');
    assert.equal(record.outcome?.error?.type, 'unknown_function');
    assert.equal(record.outcome?.error?.code, -41001);
    assert.equal(record.outcome?.error?.side_effects, 'none');
  });

  test('invalid_arguments names the offending value by JSON Pointer', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 'soon', extra: 1 });
    assert.equal(record.outcome?.error?.type, 'invalid_arguments');
    const pointers = (record.outcome?.error?.details?.['violations'] as { pointer: string }[]).map((v) => v.pointer).sort();
    assert.deepEqual(pointers, ['/extra', '/ms']);
  });

  test('same call_id twice runs once; the second answer is replayed', async () => {
    const call_id = 'dup-' + Date.now();
    const first = await s.client.call('diagnostics.echo', { value: 1 }, { call_id });
    const second = await s.client.call('diagnostics.echo', { value: 1 }, { call_id });
    assert.equal(first.record.outcome?.replayed, false);
    assert.equal(second.record.outcome?.replayed, true);
    assert.equal(second.record.outcome?.started_at, first.record.outcome?.started_at);
    // The device itself deduplicates too (a bridge that lost its record re-sends): replayed, same start.
    const raw = await invokeRaw(s, { call_id, function: 'diagnostics.echo', arguments: { value: 1 } });
    assert.equal(raw.replayed, true);
    assert.equal(raw.started_at, first.record.outcome?.started_at);
  });

  test('idempotency_conflict at the bridge and on the device', async () => {
    const call_id = 'conf-' + Date.now();
    await s.client.call('diagnostics.echo', { value: 1 }, { call_id });
    const e = await httpError(s.client.call('diagnostics.echo', { value: 2 }, { call_id }));
    assert.equal(e.status, 409);
    assert.equal(e.error.type, 'idempotency_conflict');
    const raw = await invokeRaw(s, { call_id, function: 'diagnostics.echo', arguments: { value: 2 } });
    assert.equal(raw.state, 'failed');
    assert.equal(raw.error?.type, 'idempotency_conflict');
  });

  test('function_changed when descriptor_hash does not match', async () => {
    const raw = await invokeRaw(s, { call_id: 'fc-' + Date.now(), function: 'device.info', descriptor_hash: 'sha256-' + 'A'.repeat(43) });
    assert.equal(raw.error?.type, 'function_changed');
    const good = s.agent.registry.get('device.info')!.descriptor.descriptor_hash;
    const ok = await invokeRaw(s, { call_id: 'fc2-' + Date.now(), function: 'device.info', descriptor_hash: good });
    assert.equal(ok.state, 'completed');
  });

  test('identity_mismatch for a call naming another device', async () => {
    const raw = await invokeRaw(s, { call_id: 'id-' + Date.now(), function: 'device.info', device_id: 'dev_other' });
    assert.equal(raw.state, 'failed');
    assert.equal(raw.error?.type, 'identity_mismatch');
  });

  test('call_expired for a UUIDv7 call_id older than the dedup window', async () => {
    const old = uuidv7({ msecs: Date.now() - 3 * 86_400_000 });
    const { record } = await s.client.call('device.info', {}, { call_id: old });
    assert.equal(record.outcome?.state, 'expired');
    assert.equal(record.outcome?.error?.type, 'call_expired');
  });

  test('timeout: the handler is aborted and the call ends failed/timeout', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 20_000 }, { timeout_ms: 300 });
    assert.equal(record.outcome?.state, 'failed');
    assert.equal(record.outcome?.error?.type, 'timeout');
    // `none` only when the handler saw the abort and stopped (a handler that ran on would make it `possible`).
    assert.equal(record.outcome?.error?.side_effects, 'none', 'the handler stopped on the abort before committing');
  });

  test('device_unavailable and execution_failed from the handler; a crash hides its private detail', async () => {
    const a = await s.client.call('diagnostics.wait', { ms: 0, fail_with: 'device_unavailable' });
    assert.equal(a.record.outcome?.error?.type, 'device_unavailable');
    assert.equal(a.record.outcome?.error?.retryable, true);
    const b = await s.client.call('diagnostics.wait', { ms: 0, fail_with: 'execution_failed' });
    assert.equal(b.record.outcome?.error?.type, 'execution_failed');
    const c = await s.client.call('diagnostics.wait', { ms: 0, fail_with: 'crash' });
    assert.equal(c.record.outcome?.error?.type, 'execution_failed');
    assert.doesNotMatch(JSON.stringify(c.record), /secret/);
  });

  test('an output that fails its schema is completed with output_valid false', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 0, fail_with: 'bad_output' });
    assert.equal(record.outcome?.state, 'completed');
    assert.equal(record.outcome?.output_valid, false);
  });

  test('confirmation_unavailable when a call needs a prompt and none can be shown', async () => {
    const { record } = await s.client.call('diagnostics.confirm', {});
    assert.equal(record.outcome?.state, 'rejected');
    assert.equal(record.outcome?.error?.type, 'confirmation_unavailable');
  });

  test('cancel a running call: cancelled, handler aborted', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 20_000 }, { wait: false });
    await until(async () => (await s.client.getCall(record.call_id)).state === 'running', 5000, 'running');
    const c = await s.client.cancel(record.call_id);
    assert.equal(c.outcome?.state, 'cancelled');
    assert.equal(c.outcome?.error?.type, 'cancelled');
    // `none`: the handler saw its signal and stopped before committing anything.
    assert.equal(c.outcome?.error?.side_effects, 'none');
  });

  test('cancel a call waiting for a lock: cancelled, never started', async () => {
    const holder = await s.client.call('diagnostics.wait', { ms: 1500, lock: 'l1' }, { wait: false });
    await until(async () => (await s.client.getCall(holder.record.call_id)).state === 'running', 5000, 'holder running');
    const waiter = await s.client.call('diagnostics.wait', { ms: 10, lock: 'l1' }, { wait: false });
    await until(async () => (await s.client.getCall(waiter.record.call_id)).state === 'accepted', 5000, 'waiter accepted');
    const c = await s.client.cancel(waiter.record.call_id);
    assert.equal(c.outcome?.state, 'cancelled');
    assert.equal(c.outcome?.error?.side_effects, 'none');
    assert.equal(c.outcome?.started_at, null);
    const h = await s.client.waitTerminal(holder.record.call_id, 10_000);
    assert.equal(h.outcome?.state, 'completed');
  });

  test('device_busy when the lock stays held past the deadline; calls on one lock run one at a time', async () => {
    const holder = await s.client.call('diagnostics.wait', { ms: 1500, lock: 'l2' }, { wait: false });
    await until(async () => (await s.client.getCall(holder.record.call_id)).state === 'running', 5000, 'holder running');
    const { record } = await s.client.call('diagnostics.wait', { ms: 10, lock: 'l2' }, { timeout_ms: 200 });
    assert.equal(record.outcome?.state, 'expired');
    assert.equal(record.outcome?.error?.type, 'device_busy');
    const after = await s.client.call('diagnostics.wait', { ms: 10, lock: 'l2' });
    const h = await s.client.getCall(holder.record.call_id);
    assert.equal(h.outcome?.state, 'completed');
    assert.ok(Date.parse(after.record.outcome!.started_at!) >= Date.parse(h.outcome!.finished_at!), 'the second call started after the first finished');
  });

  test('not_cancellable once the handler committed', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 800, commit_at_start: true }, { wait: false });
    await until(async () => (await s.client.getCall(record.call_id)).state === 'running', 5000, 'running');
    const e = await httpError(s.client.cancel(record.call_id));
    assert.equal(e.status, 409);
    assert.equal(e.error.type, 'not_cancellable');
    assert.equal((await s.client.waitTerminal(record.call_id, 5000)).outcome?.state, 'completed');
  });

  test('a cancel for an unknown call_id leaves a tombstone: the later invoke answers cancelled', async () => {
    const conn = s.bridge.hub.get(ids.device_id)!;
    const call_id = 'tomb-' + Date.now();
    const c = await conn.peer.request<Outcome>(METHODS.cancel, { call_id });
    assert.equal(c.state, 'cancelled');
    const o = await invokeRaw(s, { call_id, function: 'device.info' });
    assert.equal(o.state, 'cancelled');
  });

  test('aios/call.list pages through the journal newest first, filtered by state', async () => {
    const conn = s.bridge.hub.get(ids.device_id)!;
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push((await s.client.call('diagnostics.echo', { value: i }, { call_id: `list-${Date.now()}-${i}` })).record.call_id);
    const first = await conn.peer.request<{ calls: { call_id: string; state: string }[]; next_cursor?: string }>(METHODS.callList, { limit: 2, states: ['completed'] });
    assert.equal(first.calls.length, 2);
    assert.deepEqual(first.calls.map((c) => c.call_id), [made[2], made[1]], 'newest first');
    assert.ok(first.next_cursor);
    assert.ok(first.calls.every((c) => c.state === 'completed'));
    const second = await conn.peer.request<{ calls: { call_id: string }[] }>(METHODS.callList, { limit: 2, states: ['completed'], cursor: first.next_cursor });
    assert.ok(second.calls.length >= 1);
    assert.equal(new Set([...first.calls, ...second.calls].map((c) => c.call_id)).size, first.calls.length + second.calls.length, 'no call on two pages');
    const got = await conn.peer.request<{ state: string }>(METHODS.callGet, { call_id: first.calls[0]!.call_id });
    assert.equal(got.state, 'completed');
  });

  test('progress notifications reach the runtime as SSE events', async () => {
    const { record } = await s.client.call('diagnostics.wait', { ms: 600, steps: 3 }, { wait: false });
    const res = await fetch(`${s.url}/v1/calls/${record.call_id}/events`, { headers: { Authorization: `Bearer ${s.tokens.runtime}` } });
    const text = await res.text();
    assert.match(text, /event: progress/);
    assert.match(text, /"state":"running"/);
    assert.match(text, /event: outcome\ndata: .*"state":"completed"/);
  });
});

test('a function disabled in the config answers unknown_function', async () => {
  const s = await inProcessStack({ agent: { functions: { disabled: ['device.notify'] } } });
  try {
    const { record } = await s.client.call('device.notify', { title: 't', message: 'm' });
    assert.equal(record.outcome?.error?.type, 'unknown_function');
  } finally {
    await s.stop();
  }
});

describe('bridge and session errors', () => {
  let s: Stack;
  before(async () => {
    s = await inProcessStack({ bridge: { runtime_rate_limit: { per_second: 0.5, burst: 3 } } });
  });
  after(() => s.stop());

  test('unauthorized: bad runtime token is 401; bad device token is refused before the upgrade', async () => {
    const r = await fetch(`${s.url}/v1/devices`, { headers: { Authorization: 'Bearer nope' } });
    assert.equal(r.status, 401);
    assert.equal(((await r.json()) as { error: { type: string } }).error.type, 'unauthorized');
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${s.url.replace('http', 'ws')}/v1/device`, SUBPROTOCOL, { headers: { Authorization: 'Bearer bad' } });
      ws.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
      ws.on('error', () => undefined);
    });
    assert.equal(status, 401);
  });

  test('a path that is not valid percent-encoding is 404 not_found, not a server error', async () => {
    const r = await fetch(`${s.url}/v1/calls/%E0`, { headers: { Authorization: `Bearer ${s.tokens.runtime}` } });
    assert.equal(r.status, 404);
    assert.equal(((await r.json()) as { error: { type: string; code: number } }).error.type, 'not_found');
  });

  test('not_ready before hello, unsupported_protocol_version and identity_mismatch in hello', async () => {
    const ws = new WebSocket(`${s.url.replace('http', 'ws')}/v1/device`, SUBPROTOCOL, { headers: { Authorization: `Bearer ${s.tokens.device}` } });
    await new Promise((r) => ws.once('open', r));
    const replies: Record<string, { error?: { code: number; data?: { type: string } } }> = {};
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString()) as { id: number | null; error?: { code: number; data?: { type: string } } };
      replies[String(m.id)] = m;
    });
    const hello = { protocol_version: '1.0', client: { name: 'x', version: '9.9.9', platform: 'linux', arch: 'x64' }, device: { id: ids.device_id }, workspace_id: ids.workspace_id, user_id: ids.user_id, functions_revision: 0, limits: { max_message_bytes: 1048576, max_concurrent_calls: 1, dedupe_retention_s: 86400 } };
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: METHODS.callReport, params: { outcomes: [] } }));
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: METHODS.hello, params: { ...hello, protocol_version: '2.0' } }));
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: METHODS.hello, params: { ...hello, user_id: 'usr_other' } }));
    ws.send('{not json');
    await until(() => replies[1] && replies[2] && replies[3] && replies['null'], 5000, 'replies');
    assert.equal(replies['null']!.error?.code, -32700, 'a frame that is not JSON gets a parse error with id null');
    assert.equal(replies[1]!.error?.data?.type, 'not_ready');
    assert.equal(replies[2]!.error?.data?.type, 'unsupported_protocol_version');
    assert.equal(replies[3]!.error?.data?.type, 'identity_mismatch');
    ws.close();
  });

  test('payload_too_large for an oversized request body', async () => {
    const e = await httpError(s.client.call('diagnostics.echo', { value: 'x'.repeat(2 * 1024 * 1024) }));
    assert.equal(e.status, 413);
    assert.equal(e.error.type, 'payload_too_large');
  });

  test('rate_limited with retry_after_ms', async () => {
    let got: BridgeHttpError | undefined;
    for (let i = 0; i < 6 && !got; i++) {
      try {
        await s.client.devices();
      } catch (e) {
        if (e instanceof BridgeHttpError) got = e;
        else throw e;
      }
    }
    assert.ok(got, 'a request was rate limited');
    assert.equal(got.status, 429);
    assert.equal(got.error.type, 'rate_limited');
    assert.ok(Number(got.error.details?.['retry_after_ms']) > 0);
  });
});

describe('device offline, replaced sessions, outdated clients', () => {
  test('device_offline when the device is not connected', async () => {
    const s = await inProcessStack();
    try {
      await s.agent.stop();
      await until(() => !s.bridge.hub.isOnline(ids.device_id), 5000, 'offline');
      const e = await httpError(s.client.call('device.info', {}));
      assert.equal(e.status, 409);
      assert.equal(e.error.type, 'device_offline');
    } finally {
      await s.stop();
    }
  });

  test('client_outdated: the agent stops reconnecting and says an update is needed', async () => {
    const s = await inProcessStack({ bridge: { min_client_version: '99.0.0' }, connect: false });
    try {
      const fatal = (await until(() => s.agent.session?.fatal, 5000, 'fatal stop'))!;
      assert.equal(fatal.type, 'client_outdated');
      assert.match(fatal.message, /update/i);
      assert.equal(s.agent.session?.status, 'offline');
    } finally {
      await s.stop();
    }
  });

  test('a second connection for the device replaces the first (4001) and calls go to the new one', async () => {
    const s = await inProcessStack();
    const second = await s.makeAgent({ data_dir: s.dir + '/agent2' });
    try {
      await until(() => s.agent.session?.fatal, 5000, 'first session replaced');
      assert.equal(s.agent.session?.fatal?.type, 'replaced');
      await until(() => s.bridge.hub.isOnline(ids.device_id), 5000, 'second online');
      const { record } = await s.client.call('device.info', {});
      assert.equal(record.outcome?.state, 'completed');
    } finally {
      await second.stop();
      await s.stop();
    }
  });

  test('a second agent on the same data directory refuses to start, and the first keeps working', async () => {
    const s = await inProcessStack();
    try {
      await assert.rejects(s.makeAgent(), /in use by another agent/);
      const { record } = await s.client.call('device.info', {});
      assert.equal(record.outcome?.state, 'completed');
    } finally {
      await s.stop();
    }
  });

  test('dropping the socket mid-call: the outcome arrives by call.report after the reconnect', async () => {
    const s = await inProcessStack();
    try {
      const { record } = await s.client.call('diagnostics.wait', { ms: 700 }, { wait: false });
      await until(async () => (await s.client.getCall(record.call_id)).state === 'running', 5000, 'running');
      s.bridge.hub.get(ids.device_id)!.peer.transport.close(1011, 'test drop');
      const r = await s.client.waitTerminal(record.call_id, 10_000);
      assert.equal(r.outcome?.state, 'completed');
      // The acknowledgement is a frame of its own, after the outcome is committed: wait for it (it never comes if the bridge does not acknowledge).
      await until(() => s.agent.journal.outbox().length === 0, 5000, 'the outbox is empty once the bridge acknowledged');
    } finally {
      await s.stop();
    }
  });
});

describe('lease (§3.3)', () => {
  test('a bridge that stays away past lease_ms: cancellable running calls are cancelled, committed ones finish; outcomes kept for delivery', async () => {
    const s = await inProcessStack({ bridge: { lease_ms: 300 } });
    try {
      const a = await s.client.call('diagnostics.wait', { ms: 20_000 }, { wait: false });
      const b = await s.client.call('diagnostics.wait', { ms: 1500, commit_at_start: true }, { wait: false });
      await until(async () => (await s.client.getCall(a.record.call_id)).state === 'running' && (await s.client.getCall(b.record.call_id)).state === 'running', 5000, 'both running');
      await s.bridge.stop();
      const find = (id: string) => s.agent.journal.outbox().find((o) => o.call_id === id);
      const oa = (await until(() => find(a.record.call_id), 10_000, 'lease cancel'))!;
      assert.equal(oa.state, 'cancelled');
      assert.equal(oa.error?.details?.['reason'], 'lease_expired');
      const ob = (await until(() => find(b.record.call_id), 10_000, 'committed call finishes'))!;
      assert.equal(ob.state, 'completed');
    } finally {
      await s.stop();
    }
  });
});
