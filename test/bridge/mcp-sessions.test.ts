/**
 * MCP sessions on the bridge (docs/mcp.md): resumability of a lost POST stream with `Last-Event-ID`, the idle
 * TTL, the per-token stream cap shared through StreamLimiter, the Host rule. A real bridge and agent in this
 * process; the MCP side is raw Streamable HTTP (what any client sends), so the test sees the streams themselves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ids, inProcessStack, until } from '../helpers/stack.js';
import { hostsFor } from '../../src/bridge/mcp/endpoint.js';
import { slow } from '../helpers/wait.js';

type Stack = Awaited<ReturnType<typeof inProcessStack>>;
interface SseEvent {
  id?: string;
  data: string;
}

const INIT = (version = '2025-11-25') => ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw-client', version: '1' } } });

/** POSTs a JSON-RPC message; returns the response (its body unread). */
function post(s: Stack, path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(s.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.tokens.runtime}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', ...headers },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

/** Reads SSE events from a response until `stop` says so (or the stream ends). */
async function readSse(res: Response, stop: (e: SseEvent, all: SseEvent[]) => boolean): Promise<SseEvent[]> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const all: SseEvent[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return all;
    buf += dec.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const e: SseEvent = { data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('id:')) e.id = line.slice(3).trim();
        else if (line.startsWith('data:')) e.data += line.slice(5).trim();
      }
      all.push(e);
      if (stop(e, all)) {
        await reader.cancel().catch(() => undefined);
        return all;
      }
    }
  }
}

/** initialize + notifications/initialized; returns the session id. */
async function session(s: Stack, path: string): Promise<string> {
  const r = await post(s, path, INIT());
  assert.equal(r.status, 200, await r.clone().text());
  const sid = r.headers.get('mcp-session-id')!;
  await readSse(r, (e) => e.data.includes('"result"'));
  const n = await post(s, path, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid });
  assert.equal(n.status, 202);
  return sid;
}

test('resumability: a client that lost its POST stream mid-call resumes it with Last-Event-ID and gets the result', async () => {
  const s = await inProcessStack();
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    const ac = new AbortController();
    const call = await post(s, path, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'diagnostics-wait', arguments: { ms: 1500 }, _meta: { 'org.aios/call_id': 'mcp-resume-1' } } }, { 'mcp-session-id': sid }, ac.signal);
    assert.equal(call.status, 200);
    // The priming event carries the stream's first event id; then the stream is lost.
    const first = await readSse(call, (e) => e.id !== undefined);
    const lastId = first.at(-1)!.id!;
    ac.abort();
    await until(() => s.bridge.router.get(ids.workspace_id, 'mcp-resume-1')?.outcome, 15_000, 'the call finished');
    const resumed = await fetch(s.url + path, { headers: { authorization: `Bearer ${s.tokens.runtime}`, accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', 'last-event-id': lastId } });
    assert.equal(resumed.status, 200);
    const events = await readSse(resumed, (e) => e.data.includes('"result"'));
    const result = JSON.parse(events.at(-1)!.data) as { id: number; result: { structuredContent: unknown; _meta: Record<string, { state: string }> } };
    assert.equal(result.id, 2, 'the response to the request whose stream was lost');
    assert.equal(result.result._meta['org.aios/outcome']!.state, 'completed');
    assert.ok((result.result.structuredContent as { waited_ms: number }).waited_ms >= 1500, JSON.stringify(result.result.structuredContent));
    // An event id the store does not hold is refused, never answered with silence.
    const bad = await fetch(s.url + path, { headers: { authorization: `Bearer ${s.tokens.runtime}`, accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', 'last-event-id': 'nope_1' } });
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  } finally {
    await s.stop();
  }
});

test('a request without a progressToken answered quickly is one JSON body; with a progressToken, an SSE stream', async () => {
  const s = await inProcessStack();
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    const h = { 'mcp-session-id': sid };
    const quick = await post(s, path, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'diagnostics-echo', arguments: { value: 7 }, _meta: { 'org.aios/call_id': 'mcp-json-1' } } }, h);
    assert.equal(quick.status, 200);
    assert.equal(quick.headers.get('content-type'), 'application/json');
    assert.equal(quick.headers.get('mcp-session-id'), sid);
    const body = (await quick.json()) as { jsonrpc: string; id: number; result: { structuredContent: unknown; _meta: Record<string, { state: string; call_id: string }> } };
    assert.equal(body.id, 2);
    assert.deepEqual(body.result.structuredContent, { value: 7 });
    assert.equal(body.result._meta['org.aios/outcome']!.call_id, 'mcp-json-1');
    const list = await post(s, path, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, h);
    assert.equal(list.headers.get('content-type'), 'application/json');
    assert.ok(((await list.json()) as { result: { tools: unknown[] } }).result.tools.length > 0);
    const streamed = await post(s, path, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'diagnostics-echo', arguments: { value: 8 }, _meta: { progressToken: 'p4' } } }, h);
    assert.equal(streamed.headers.get('content-type'), 'text/event-stream');
    const events = await readSse(streamed, (e) => e.data.includes('"result"'));
    assert.match(events.at(-1)!.data, /"structuredContent":\{"value":8\}/);
  } finally {
    await s.stop();
  }
});

test('a JSON answer carries its Content-Length (one body, not chunked), and its text content is the output as JSON', async () => {
  const s = await inProcessStack();
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    const r = await post(s, path, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'diagnostics-echo', arguments: { value: 'ünï' } } }, { 'mcp-session-id': sid });
    assert.equal(r.headers.get('content-type'), 'application/json');
    assert.equal(r.headers.get('transfer-encoding'), null);
    const bytes = Buffer.from(await r.arrayBuffer());
    assert.equal(r.headers.get('content-length'), String(bytes.length));
    const body = JSON.parse(bytes.toString('utf8')) as { result: { content: { type: string; text: string }[]; structuredContent: unknown } };
    assert.deepEqual(body.result.structuredContent, { value: 'ünï' });
    assert.deepEqual(body.result.content, [{ type: 'text', text: JSON.stringify({ value: 'ünï' }) }]);
  } finally {
    await s.stop();
  }
});

test('resumability of a slow call without a progressToken: its answer turns into a stream, which resumes mid-call with Last-Event-ID', { timeout: slow(60_000) }, async () => {
  const s = await inProcessStack();
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    const ac = new AbortController();
    const call = await post(s, path, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'diagnostics-wait', arguments: { ms: 4000 }, _meta: { 'org.aios/call_id': 'mcp-resume-live' } } }, { 'mcp-session-id': sid }, ac.signal);
    assert.equal(call.headers.get('content-type'), 'text/event-stream');
    const first = await readSse(call, (e) => e.id !== undefined);
    const lastId = first.at(-1)!.id!;
    ac.abort();
    assert.equal(s.bridge.router.get(ids.workspace_id, 'mcp-resume-live')?.outcome, undefined, 'still running when resumed');
    const resumed = await fetch(s.url + path, { headers: { authorization: `Bearer ${s.tokens.runtime}`, accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', 'last-event-id': lastId } });
    assert.equal(resumed.status, 200);
    const events = await readSse(resumed, (e) => e.data.includes('"result"'));
    const result = JSON.parse(events.at(-1)!.data) as { id: number; result: { _meta: Record<string, { state: string }> } };
    assert.equal(result.id, 2);
    assert.equal(result.result._meta['org.aios/outcome']!.state, 'completed');
  } finally {
    await s.stop();
  }
});

test('idle TTL: a session with no request for mcp.session_ttl_s is closed, and gives its stream slot back', async () => {
  const s = await inProcessStack({ bridge: { mcp: { session_ttl_s: 1 } } });
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    assert.equal(s.bridge.streams.held(s.tokens.runtime), 1);
    await until(() => s.bridge.mcp.sessionCount === 0, 10_000, 'the idle session closed');
    assert.equal(s.bridge.streams.held(s.tokens.runtime), 0);
    const r = await post(s, path, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, { 'mcp-session-id': sid });
    assert.equal(r.status, 404, 'the client learns to initialize again');
  } finally {
    await s.stop();
  }
});

test('MCP sessions count against the token\'s stream cap (StreamLimiter): past it, 429; DELETE gives a slot back', async () => {
  const s = await inProcessStack();
  try {
    const path = '/v1/mcp';
    const limit = s.bridge.streams.limit;
    const sids: string[] = [];
    for (let i = 0; i < limit; i++) {
      const r = await post(s, path, INIT());
      assert.equal(r.status, 200);
      sids.push(r.headers.get('mcp-session-id')!);
      await r.body?.cancel();
    }
    const over = await post(s, path, INIT());
    assert.equal(over.status, 429);
    assert.equal(((await over.json()) as { error: { type: string } }).error.type, 'rate_limited');
    const del = await fetch(s.url + path, { method: 'DELETE', headers: { authorization: `Bearer ${s.tokens.runtime}`, 'mcp-session-id': sids[0]!, 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(del.status, 200);
    await until(() => s.bridge.streams.held(s.tokens.runtime) === limit - 1, 10_000, 'the slot given back');
    const again = await post(s, path, INIT());
    assert.equal(again.status, 200);
    await again.body?.cancel();
  } finally {
    await s.stop();
  }
});

test('a session is bound to its token and its path: presented elsewhere, 404', async () => {
  const other = 'rt_other_' + Date.now();
  const s = await inProcessStack({ bridge: { runtime_tokens: { [other]: { workspace_id: ids.workspace_id, name: 'Second runtime' } } } });
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    const list = { jsonrpc: '2.0', id: 5, method: 'tools/list' };
    const own = await post(s, path, list, { 'mcp-session-id': sid });
    assert.equal(own.status, 200);
    await own.body?.cancel();
    assert.equal((await post(s, '/v1/mcp', list, { 'mcp-session-id': sid })).status, 404, 'another path');
    assert.equal((await post(s, path, list, { 'mcp-session-id': sid, authorization: `Bearer ${other}` })).status, 404, 'another token of the same workspace');
  } finally {
    await s.stop();
  }
});

test('ending a session (DELETE) does not cancel its running call: it finishes and its outcome is read by call id', async () => {
  const s = await inProcessStack();
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    const call = await post(s, path, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'diagnostics-wait', arguments: { ms: 1500 }, _meta: { 'org.aios/call_id': 'mcp-delete-1' } } }, { 'mcp-session-id': sid });
    assert.equal(call.status, 200);
    await until(() => s.bridge.router.get(ids.workspace_id, 'mcp-delete-1')?.state === 'running', 10_000, 'running');
    const del = await fetch(s.url + path, { method: 'DELETE', headers: { authorization: `Bearer ${s.tokens.runtime}`, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(del.status, 200);
    await call.body?.cancel().catch(() => undefined);
    const done = await s.bridge.router.waitFor(ids.workspace_id, 'mcp-delete-1', 15_000);
    assert.equal(done?.outcome?.state, 'completed');
    assert.equal(s.bridge.mcp.sessionCount, 0);
  } finally {
    await s.stop();
  }
});

test('notifications/cancelled for a tools/call answered without a progressToken cancels the call; the session goes on', async () => {
  const s = await inProcessStack();
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    const h = { 'mcp-session-id': sid };
    const ac = new AbortController();
    const call = await post(s, path, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'diagnostics-wait', arguments: { ms: 60_000 }, _meta: { 'org.aios/call_id': 'mcp-cancel-json-1' } } }, h, ac.signal);
    assert.equal(call.status, 200);
    await until(() => s.bridge.router.get(ids.workspace_id, 'mcp-cancel-json-1')?.state === 'running', 10_000, 'running');
    const n = await post(s, path, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2, reason: 'changed my mind' } }, h);
    assert.equal(n.status, 202);
    const done = await s.bridge.router.waitFor(ids.workspace_id, 'mcp-cancel-json-1', 15_000);
    assert.equal(done?.outcome?.state, 'cancelled');
    ac.abort();
    const echo = await post(s, path, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'diagnostics-echo', arguments: { value: 1 } } }, h);
    assert.deepEqual(((await echo.json()) as { result: { structuredContent: unknown } }).result.structuredContent, { value: 1 });
  } finally {
    await s.stop();
  }
});

test('a task-augmented tools/call is refused (the bridge offers no tasks), and runs nothing', async () => {
  const s = await inProcessStack();
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    const r = await post(s, path, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'diagnostics-echo', arguments: { value: 1 }, task: { ttl: 60_000 }, _meta: { 'org.aios/call_id': 'mcp-task-1' } } }, { 'mcp-session-id': sid });
    const text = await r.text();
    assert.match(text, /"error":\{"code":-?\d+/, text);
    assert.doesNotMatch(text, /"result"/);
    assert.equal(s.bridge.router.get(ids.workspace_id, 'mcp-task-1'), undefined);
  } finally {
    await s.stop();
  }
});

test('bad input is a typed error, never a 5xx, and leaves the session working', async () => {
  const s = await inProcessStack();
  try {
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const sid = await session(s, path);
    const h = { 'mcp-session-id': sid };
    const rawPost = (body: string) => fetch(s.url + path, { method: 'POST', headers: { authorization: `Bearer ${s.tokens.runtime}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', ...h }, body });
    const notJson = await rawPost('{"jsonrpc":');
    assert.equal(notJson.status, 400);
    assert.equal(((await notJson.json()) as { error: { type: string } }).error.type, 'bad_request');
    const big = await rawPost(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'diagnostics-echo', arguments: { value: 'x'.repeat(1100 * 1024) } } }));
    assert.equal(big.status, 413);
    await big.body?.cancel();
    /** A JSON-RPC error answer for one request (read from the SSE or JSON response). */
    const rpcError = async (params: unknown, id: number, raw?: string) => {
      const r = raw !== undefined ? await rawPost(raw) : await post(s, path, { jsonrpc: '2.0', id, method: 'tools/call', params }, h);
      assert.ok(r.status < 500, `status ${r.status}`);
      const text = await r.text();
      const m = /\{"(?:jsonrpc|result|error)".*\}/.exec(text)?.[0] ?? text;
      return (JSON.parse(m) as { error?: { code: number; message: string } }).error;
    };
    assert.equal((await rpcError({ name: 'diagnostics-echo', arguments: 'not an object' }, 10))?.code, -32602);
    assert.equal((await rpcError({ name: 'diagnostics-echo', arguments: {}, _meta: { 'org.aios/confirm_timeout_ms': 1.5 } }, 11))?.code, -32602);
    // A lone surrogate (not I-JSON), written as a JSON escape so it survives the wire.
    const lone = await rpcError(undefined, 12, '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"diagnostics-echo","arguments":{"value":"\\ud800"}}}');
    assert.equal(lone?.code, -32602);
    assert.match(lone?.message ?? '', /I-JSON/);
    // The session still answers.
    const ok = await post(s, path, { jsonrpc: '2.0', id: 13, method: 'tools/call', params: { name: 'diagnostics-echo', arguments: { value: 1 } } }, h);
    assert.match(await ok.text(), /"structuredContent":\{"value":1\}/);
  } finally {
    await s.stop();
  }
});

test('Host rule: the listen address, loopback names when bound to loopback, and public_url', () => {
  const h = hostsFor('http://127.0.0.1:8787', 'https://bridge.example.com');
  for (const ok of ['127.0.0.1:8787', 'localhost:8787', '[::1]:8787', 'bridge.example.com']) assert.ok(h.has(ok), ok);
  for (const bad of ['evil.example', 'localhost:9999', '10.0.0.5:8787']) assert.ok(!h.has(bad), bad);
  const lan = hostsFor('http://192.168.1.4:8787', undefined);
  assert.ok(lan.has('192.168.1.4:8787'));
  assert.ok(!lan.has('localhost:8787'), 'a LAN-bound bridge is not reached as localhost');
});
