/**
 * No request a runtime can send produces a 5xx (issue 13, Low 6 and 7). A seeded fuzz of the calls API
 * on loopback (a bounded number of mutated bodies: wrong types, missing and extra fields, deep and huge
 * values, odd Unicode, non-JSON), the named cases (lone surrogates, 3000-deep nesting, non-finite
 * numbers, time parameters past 24 h) at the bridge, and the same cases sent straight to the agent.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ids, inProcessStack } from '../helpers/stack.js';
import { METHODS, MAX_TIME_PARAM_MS, type Outcome } from '../../src/protocol/messages.js';
import { RpcError, RPC } from '../../src/protocol/errors.js';

/** mulberry32: a small seeded generator, so a failing body can be reproduced from the seed and index. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function deep(n: number, leaf: unknown = 1): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < n; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

const ODD_STRINGS = ['\ud800', 'a\udc00b', '\udbff\udbff', '\u0000', '\u202e\u200b', '𝕏'.repeat(1000), 'x'.repeat(70_000), '', '\ufeff{}'];
const ODD_VALUES: unknown[] = [null, true, 0, -1, 1.5, 2 ** 31, 2 ** 53, -(2 ** 63), 1e308, [], {}, 'str', ...ODD_STRINGS, deep(3000), deep(65), deep(63), { __proto__: { x: 1 } }, { constructor: 1 }];
const FIELDS = ['workspace_id', 'device_id', 'function', 'arguments', 'call_id', 'timeout_ms', 'confirm_timeout_ms', 'wait', 'wait_timeout_ms', 'descriptor_hash', 'requester'];

/** One mutated request body (text, since some are not JSON at all). */
function mutate(r: () => number, base: Record<string, unknown>): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const body: Record<string, unknown> = structuredClone(base);
  const kind = Math.floor(r() * 8);
  if (kind === 0) delete body[pick(FIELDS)];
  else if (kind === 1) body[pick(FIELDS)] = pick(ODD_VALUES);
  else if (kind === 2) body[`extra_${Math.floor(r() * 5)}`] = pick(ODD_VALUES);
  else if (kind === 3) body['arguments'] = { value: pick(ODD_VALUES) };
  else if (kind === 4) body['arguments'] = { [pick(ODD_STRINGS).slice(0, 20)]: 1 };
  else if (kind === 5) return pick(['', 'null', '[]', '"x"', '{', '{"a":', '{"arguments":1e400}', '\u0000', '{"wait":true,"wait":false}', 'x'.repeat(10)]);
  else if (kind === 6) {
    const text = JSON.stringify(body);
    const i = Math.floor(r() * text.length);
    return text.slice(0, i) + pick(['"', '}', '\\', '\\ud800', ',', '']) + text.slice(i + 1);
  } else body[pick(['timeout_ms', 'confirm_timeout_ms', 'wait_timeout_ms'])] = pick([0, -5, 2 ** 31, MAX_TIME_PARAM_MS, MAX_TIME_PARAM_MS + 1, 1.5, '100']);
  return JSON.stringify(body);
}

describe('the calls API never answers 5xx', () => {
  let s: Awaited<ReturnType<typeof inProcessStack>>;
  const base = { workspace_id: ids.workspace_id, device_id: ids.device_id, function: 'diagnostics.echo', arguments: { value: 1 }, wait: true, wait_timeout_ms: 2000 };
  before(async () => {
    s = await inProcessStack({ bridge: { runtime_rate_limit: { per_second: 10_000, burst: 10_000 } } });
  });
  after(() => s?.stop());

  const post = (path: string, body: string) =>
    fetch(`${s.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${s.tokens.runtime}`, 'content-type': 'application/json' }, body });

  test('named cases answer 400 invalid_arguments with the pointer', async () => {
    const cases: [string, string][] = [
      [JSON.stringify({ ...base, arguments: { value: '\ud800' } }), '/arguments/value'],
      [JSON.stringify({ ...base, arguments: { value: deep(3000) } }), '/arguments/value'],
      [JSON.stringify({ ...base, arguments: { ['k\udc00']: 1 } }), '/arguments'],
      ['{"workspace_id":"ws_t","device_id":"dev_t","function":"diagnostics.echo","arguments":{"value":1e400}}', '/arguments/value'],
    ];
    for (const [body, pointer] of cases) {
      const r = await post('/v1/calls', body);
      const j = (await r.json()) as { error: { type: string; details?: { violations?: { pointer: string }[] } } };
      assert.equal(r.status, 400, body.slice(0, 80));
      assert.equal(j.error.type, 'invalid_arguments');
      assert.ok(j.error.details?.violations?.[0]?.pointer.startsWith(pointer), `${j.error.details?.violations?.[0]?.pointer} for ${pointer}`);
    }
  });

  test('time parameters above 24 h are refused with 400; 24 h itself is accepted', async () => {
    for (const k of ['timeout_ms', 'confirm_timeout_ms', 'wait_timeout_ms']) {
      const r = await post('/v1/calls', JSON.stringify({ ...base, [k]: 2 ** 31 }));
      assert.equal(r.status, 400, k);
      assert.equal(((await r.json()) as { error: { type: string } }).error.type, 'invalid_arguments');
    }
    const ok = await post('/v1/calls', JSON.stringify({ ...base, confirm_timeout_ms: MAX_TIME_PARAM_MS, timeout_ms: MAX_TIME_PARAM_MS }));
    assert.equal(ok.status, 200);
    assert.equal(((await ok.json()) as { outcome: { state: string } }).outcome.state, 'completed', 'a 24 h budget does not cancel the call at once');
  });

  test('400 seeded mutated bodies of POST /v1/calls, cancel and odd paths: no 5xx', async () => {
    const r = rng(0x5ec13);
    const bad: string[] = [];
    for (let i = 0; i < 400; i++) {
      const body = mutate(r, base);
      const res = await post('/v1/calls', body);
      await res.arrayBuffer();
      if (res.status >= 500) bad.push(`#${i} ${res.status} ${body.slice(0, 120)}`);
    }
    for (const body of ['null', '[]', '"x"', '{"reason":1}', '{"reason":"\\ud800"}', '{', '']) {
      const res = await post('/v1/calls/no-such-call/cancel', body);
      await res.arrayBuffer();
      if (res.status >= 500) bad.push(`cancel ${res.status} ${body}`);
    }
    for (const path of ['/v1/calls/%ZZ', '/v1/calls/%ED%A0%80', '/v1/devices/%00', '/v1/calls/x/events/y', '/v1/devices/dev_t/functions/%F0']) {
      const res = await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${s.tokens.runtime}` } });
      await res.arrayBuffer();
      if (res.status >= 500) bad.push(`GET ${path} ${res.status}`);
    }
    assert.deepEqual(bad, []);
  });

  test('the agent refuses the same things itself: invalid_arguments with the pointer, -32602 for time', async () => {
    const conn = s.bridge.hub.get(ids.device_id)!;
    const params = (extra: Record<string, unknown>) => ({ call_id: `01a2b3c4-0000-7000-8000-${String(Math.floor(Math.random() * 1e12)).padStart(12, '0')}`, function: 'diagnostics.echo', arguments: { value: 1 }, ...ids, ...extra });
    for (const [args, pointer] of [[{ value: '\ud800' }, '/value'], [{ value: deep(3000) }, '/value']] as const) {
      const o = await conn.peer.request<Outcome>(METHODS.invoke, params({ arguments: args }), 10_000);
      assert.equal(o.error?.type, 'invalid_arguments');
      const v = (o.error?.details as { violations: { pointer: string }[] }).violations[0]!;
      assert.ok(v.pointer.startsWith(pointer), v.pointer);
    }
    for (const k of ['timeout_ms', 'confirm_timeout_ms']) {
      await assert.rejects(conn.peer.request(METHODS.invoke, params({ [k]: 2 ** 31 }), 10_000), (e) => e instanceof RpcError && e.code === RPC.invalid_params, k);
    }
  });
});
