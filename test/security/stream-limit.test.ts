/**
 * Issue 27, finding 7: one runtime token could hold any number of SSE `events` streams and `wait: true`
 * requests open, each with its socket, listeners and timers. Now they share one cap per token
 * (`runtime_stream_limit`, `StreamLimiter` in src/bridge/http-util.ts); past it `429 rate_limited` with
 * `Retry-After`, and a refused wait creates no call. A real bridge and a real agent in this process; the
 * streams are real HTTP requests over loopback.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { inProcessStack, ids, until } from '../helpers/stack.js';

const LIMIT = 3;

describe('runtime_stream_limit caps open event streams and waiting requests per token', () => {
  let s: Awaited<ReturnType<typeof inProcessStack>>;
  let callId = '';
  const open: AbortController[] = [];
  before(async () => {
    s = await inProcessStack({ bridge: { runtime_stream_limit: LIMIT, runtime_tokens: { rt_other: { workspace_id: ids.workspace_id } } } });
    const r = await s.client.call('diagnostics.wait', { ms: 600_000 }, { wait: false, timeout_ms: 700_000 });
    callId = r.record.call_id;
  });
  after(async () => {
    for (const a of open) a.abort();
    await s.client.cancel(callId).catch(() => undefined);
    await s?.stop();
  });

  const stream = async (token: string) => {
    const a = new AbortController();
    const res = await fetch(`${s.url}/v1/calls/${callId}/events`, { headers: { Authorization: `Bearer ${token}` }, signal: a.signal });
    if (res.status === 200) open.push(a);
    else await res.text();
    return { res, a };
  };
  const submitWait = (token: string, id: string) =>
    fetch(`${s.url}/v1/calls`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workspace_id: ids.workspace_id, device_id: ids.device_id, function: 'diagnostics.echo', arguments: { message: 'x' }, call_id: id, wait: true }),
    });

  test('the token holds LIMIT streams; the next stream and a wait: true request get 429 with Retry-After, and no call is made', async () => {
    for (let i = 0; i < LIMIT; i++) assert.equal((await stream(s.tokens.runtime)).res.status, 200, `stream ${i + 1}`);
    const over = await stream(s.tokens.runtime);
    assert.equal(over.res.status, 429);
    assert.ok(Number(over.res.headers.get('retry-after')) >= 1, 'Retry-After is set');
    const refused = await submitWait(s.tokens.runtime, 'c_refused_wait');
    assert.equal(refused.status, 429);
    const body = (await refused.json()) as { error: { type: string; details: { limit: number } } };
    assert.equal(body.error.type, 'rate_limited');
    assert.equal(body.error.details.limit, LIMIT);
    const lookup = await fetch(`${s.url}/v1/calls/c_refused_wait`, { headers: { Authorization: `Bearer ${s.tokens.runtime}` } });
    assert.equal(lookup.status, 404, 'a refused wait creates no call');
    await lookup.text();
  });

  test('another token is not limited by this one; closing a stream frees its place', async () => {
    assert.equal((await stream('rt_other')).res.status, 200);
    open.shift()!.abort();
    // The bridge frees the place when it sees the socket close.
    await until(async () => {
      const r = await stream(s.tokens.runtime);
      return r.res.status === 200;
    }, 10_000, 'a place freed by the closed stream');
    const w = await submitWait('rt_other', 'c_other_wait');
    assert.equal(w.status, 200, 'a wait: true of another token completes');
    await w.text();
  });
});
