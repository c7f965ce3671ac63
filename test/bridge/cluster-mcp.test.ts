/**
 * The MCP endpoints on a cluster (issue 34; docs/mcp.md "On a cluster"): three real bridge nodes in this process
 * on one private PostgreSQL 15, a real agent, and the official SDK's MCP client. A client on node B calls a tool
 * of the agent connected to node A; a session initialised on node A is continued (and closed) on node C; a stream
 * cut on node A is resumed with Last-Event-ID on node C and replays the result it missed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { silentLogger } from '../../src/base/logger.js';
import { normalizeAgentConfig } from '../../src/config/agent-config.js';
import { startAgent, type RunningAgent } from '../../src/app/start-agent.js';
import type { Outcome } from '../../src/protocol/messages.js';
import { clusterDatabase, startCluster, STORE_UNAVAILABLE, type Tokens } from '../helpers/cluster.js';
import { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import { PgMcpSessions } from '../../src/bridge/store/pg-mcp-sessions.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { agentDoc, ids, tempDir, tokens } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

function agentOn(dir: string, url: string, t: Tokens): Promise<RunningAgent> {
  return startAgent(normalizeAgentConfig(agentDoc(dir, url, t)), silentLogger(), { backoff: { baseMs: 20, capMs: 200, resetAfterMs: 60_000 } });
}

/** The SDK's client on `url` (a session of its own, or `sessionId`'s, begun elsewhere: then no initialize). */
async function mcpClient(url: string, t: Tokens, sessionId?: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'cluster-mcp-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${t.runtime}` } }, ...(sessionId ? { sessionId } : {}) });
  await client.connect(transport);
  return { client, transport };
}

const outcomeOf = (r: CallToolResult): Outcome => (r._meta as Record<string, Outcome>)['org.aios/outcome']!;

/** Three nodes, the agent on node A, its functions known to the cluster. */
/**
 * A `tools/call` of `diagnostics.wait` on a session, long enough that its answer is an SSE stream: read up to
 * the stream's first event id (what a client resumes from), and give the controller that cuts it.
 */
async function streamOn(url: string, sid: string, t: Tokens, callId: string, ms: number): Promise<{ ac: AbortController; last: string }> {
  const ac = new AbortController();
  const post = await fetch(url, {
    method: 'POST',
    signal: ac.signal,
    headers: { authorization: `Bearer ${t.runtime}`, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'diagnostics-wait', arguments: { ms }, _meta: { 'org.aios/call_id': callId } } }),
  });
  assert.equal(post.headers.get('content-type'), 'text/event-stream');
  const reader = post.body!.getReader();
  let text = '';
  let last: string | undefined;
  while (last === undefined) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'the stream ended before its first event');
    text += Buffer.from(value).toString();
    last = /^id: (.+)$/m.exec(text)?.[1];
  }
  return { ac, last };
}

async function withAgentOnA(what: string, fn: (c: Awaited<ReturnType<typeof startCluster>>, t: Tokens) => Promise<void>): Promise<void> {
  const t = tokens();
  const dir = tempDir();
  const c = await startCluster(server, what, t, ['node_a', 'node_b', 'node_c']);
  let agent: RunningAgent | undefined;
  try {
    agent = await agentOn(dir, c.urls[0]!, t);
    await until(async () => (await c.store.session(ids.workspace_id, ids.device_id))?.node_id === 'node_a', 10_000, 'the agent\'s session claimed by node A');
    await until(async () => (await c.store.getDevice(ids.workspace_id, ids.device_id))?.functions.some((f) => f.id === 'diagnostics.wait'), 10_000, 'the device\'s functions in the store');
    await fn(c, t);
  } finally {
    await agent?.stop();
    await c.stop();
  }
}

test('an MCP client on node B calls a tool of the agent connected to node A (per-device and workspace endpoints)', async () => {
  await withAgentOnA('mcpcall', async (c, t) => {
    const urlB = c.urls[1]!;
    const { client } = await mcpClient(`${urlB}/v1/mcp/devices/${ids.device_id}`, t);
    try {
      const tools = (await client.listTools()).tools.map((x) => x.name);
      assert.ok(tools.includes('diagnostics-echo'), tools.join(','));
      const r = (await client.callTool({ name: 'diagnostics-echo', arguments: { value: 'via B' } })) as CallToolResult;
      assert.notEqual(r.isError, true, JSON.stringify(r));
      assert.equal(outcomeOf(r).state, 'completed');
      assert.match(JSON.stringify(r.structuredContent ?? r.content), /via B/);
      // The call is the cluster's: its record is in PostgreSQL.
      assert.equal((await c.store.getCall(ids.workspace_id, outcomeOf(r).call_id))?.state, 'completed');
    } finally {
      await client.close();
    }
    const ws = await mcpClient(`${urlB}/v1/mcp`, t);
    try {
      const names = (await ws.client.listTools()).tools.map((x) => x.name);
      const echo = names.find((n) => /^d[0-9]+-diagnostics-echo$/.test(n));
      assert.ok(echo, names.join(','));
      const r = (await ws.client.callTool({ name: echo, arguments: { value: 2 } })) as CallToolResult;
      assert.equal(outcomeOf(r).state, 'completed', JSON.stringify(r));
    } finally {
      await ws.client.close();
    }
  });
});

test('an MCP client on node C hears tools/list_changed when the agent comes online on node A and when it goes', async () => {
  const t = tokens();
  const dir = tempDir();
  const c = await startCluster(server, 'mcpchanged', t, ['node_a', 'node_b', 'node_c']);
  let agent: RunningAgent | undefined;
  const perDevice = await mcpClient(`${c.urls[2]!}/v1/mcp/devices/${ids.device_id}`, t);
  const workspace = await mcpClient(`${c.urls[2]!}/v1/mcp`, t);
  const heard = { device: 0, workspace: 0 };
  perDevice.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.device++);
  workspace.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.workspace++);
  try {
    assert.deepEqual((await perDevice.client.listTools()).tools, [], 'the device has published nothing yet');
    agent = await agentOn(dir, c.urls[0]!, t);
    await until(() => heard.device > 0 && heard.workspace > 0, 15_000, 'list_changed on node C after the agent came to node A');
    const names = (await perDevice.client.listTools()).tools.map((x) => x.name);
    assert.ok(names.includes('diagnostics-echo'), names.join(','));
    const before = { ...heard };
    await agent.stop();
    agent = undefined;
    await until(() => heard.device > before.device && heard.workspace > before.workspace, 15_000, 'list_changed on node C after the agent left node A');
  } finally {
    await perDevice.client.close().catch(() => undefined);
    await workspace.client.close().catch(() => undefined);
    await agent?.stop();
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a session initialised on node A is continued on node C, and closed there for every node', async () => {
  await withAgentOnA('mcpsess', async (c, t) => {
    const [urlA, , urlC] = c.urls as [string, string, string];
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const a = await mcpClient(urlA + path, t);
    const sid = a.transport.sessionId;
    assert.ok(sid);
    const onC = await mcpClient(urlC + path, t, sid);
    assert.equal(onC.transport.sessionId, sid);
    const r = (await onC.client.callTool({ name: 'diagnostics-echo', arguments: { value: 'on C' } })) as CallToolResult;
    assert.equal(outcomeOf(r).state, 'completed', JSON.stringify(r));
    // The session's client is the one that initialised on A (its name is the call's requester).
    assert.equal((await c.store.getCall(ids.workspace_id, outcomeOf(r).call_id))?.params.requester?.name, 'cluster-mcp-test');
    // Another token cannot use it on any node.
    const other = await fetch(urlC + path, { method: 'POST', headers: { authorization: 'Bearer not-a-token', 'mcp-session-id': sid, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }) });
    assert.equal(other.status, 401);
    // Closed on C: node A no longer knows it either.
    await onC.transport.terminateSession();
    const gone = await fetch(urlA + path, { method: 'POST', headers: { authorization: `Bearer ${t.runtime}`, 'mcp-session-id': sid, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/list' }) });
    assert.equal(gone.status, 404, await gone.text());
    await a.client.close().catch(() => undefined);
    await onC.client.close().catch(() => undefined);
  });
});

test('a stream cut on node A is resumed with Last-Event-ID on node C and replays the result it missed', async () => {
  await withAgentOnA('mcpresume', async (c, t) => {
    const [urlA, , urlC] = c.urls as [string, string, string];
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const a = await mcpClient(urlA + path, t);
    const sid = a.transport.sessionId!;
    // A call that outlasts the JSON window: its answer becomes an SSE stream with a priming event id.
    const callId = `mcp-resume-${process.pid}`;
    const { ac, last } = await streamOn(urlA + path, sid, t, callId, 1500);
    // The client loses the stream (its connection to A is gone); the call goes on at the device.
    ac.abort();
    await until(async () => (await c.store.getCall(ids.workspace_id, callId))?.outcome !== undefined, 20_000, 'the call to end');
    await until(async () => (await c.store.pool.query(`SELECT 1 FROM mcp_events WHERE session_id = $1 AND message LIKE '%"result"%' AND strpos(message, $2) > 0`, [sid, callId])).rowCount, 10_000, 'node A to store the result event');
    // Resumed through node C, which never served this stream.
    const onC = await mcpClient(urlC + path, t, sid);
    const r = (await onC.client.request({ method: 'tools/call', params: { name: 'diagnostics-wait', arguments: { ms: 1500 } } }, CallToolResultSchema, { resumptionToken: last, timeout: 20_000 })) as CallToolResult;
    assert.equal(outcomeOf(r).call_id, callId);
    assert.equal(outcomeOf(r).state, 'completed', JSON.stringify(r));
    await onC.client.close().catch(() => undefined);
    await a.client.close().catch(() => undefined);
  });
});

test('a stream cut on node A while the call runs is resumed on node C, which follows it live until the result', async () => {
  await withAgentOnA('mcplive', async (c, t) => {
    const [urlA, , urlC] = c.urls as [string, string, string];
    const path = `/v1/mcp/devices/${ids.device_id}`;
    const a = await mcpClient(urlA + path, t);
    const sid = a.transport.sessionId!;
    const callId = `mcp-live-${process.pid}`;
    const { ac, last } = await streamOn(urlA + path, sid, t, callId, 3000);
    ac.abort();
    // Resumed on C at once: the call is still running at the device behind node A.
    const onC = await mcpClient(urlC + path, t, sid);
    const r = (await onC.client.request({ method: 'tools/call', params: { name: 'diagnostics-wait', arguments: { ms: 3000 } } }, CallToolResultSchema, { resumptionToken: last, timeout: 30_000 })) as CallToolResult;
    assert.equal(outcomeOf(r).call_id, callId);
    assert.equal(outcomeOf(r).state, 'completed', JSON.stringify(r));
    await onC.client.close().catch(() => undefined);
    await a.client.close().catch(() => undefined);
  });
});

test('PostgreSQL down: MCP initialize and a session\'s requests answer 503 store_unavailable with Retry-After on every node; back up: the session goes on', async () => {
  const t = tokens();
  const bus = { backoffMs: 50, maxBackoffMs: 300 };
  const c = await startCluster(server, 'mcpdown', t, ['node_a', 'node_b'], { node_a: { bus }, node_b: { bus } });
  const [urlA, urlB] = c.urls as [string, string];
  try {
    const a = await mcpClient(`${urlA}/v1/mcp`, t);
    const sid = a.transport.sessionId!;
    const post = (url: string, body: Record<string, unknown>, sessionId?: string) =>
      fetch(`${url}/v1/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.runtime}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(sessionId ? { 'mcp-session-id': sessionId } : {}) },
        body: JSON.stringify(body),
      });
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    server.down();
    for (const url of c.urls) {
      for (const [body, sessionId] of [[initialize, undefined], [list, sid]] as const) {
        const r = await post(url, body, sessionId);
        assert.equal(r.status, 503, `${url} ${body.method}`);
        assert.equal(r.headers.get('retry-after'), '5');
        assert.deepEqual(await r.json(), { error: STORE_UNAVAILABLE });
      }
    }
    server.up();
    // The same nodes, never restarted: the session begun on A goes on, here on B.
    await until(async () => (await post(urlB, list, sid)).status === 200, 30_000, 'the session answered on node B after PostgreSQL came back');
    await a.client.close().catch(() => undefined);
  } finally {
    await c.stop();
  }
});

test('the shared store: a session lives session_ttl_s past its last renewal, expired sessions and old events are swept, a deleted session takes its events', async () => {
  const store = await PgBridgeStore.open(clusterDatabase(server, 'mcpsweep'), { max: 2 });
  try {
    const m = new PgMcpSessions(store.pool);
    const rec = (id: string) => ({ session_id: id, token_digest: 'd', workspace_id: 'ws', device_id: null, client: { info: { name: 'c', version: '1' } } });
    await m.save(rec('short'), 0.2);
    await m.save(rec('long'), 3600);
    await m.saveEvent('long', 'e1', 's1', {} as never);
    await m.saveEvent('long', 'e2', 's1', { jsonrpc: '2.0', id: 1, result: {} });
    await m.saveEvent('long', 'e3', 's2', { jsonrpc: '2.0', id: 2, result: {} });
    assert.deepEqual(await m.eventsAfter('long', 'e1'), { stream: 's1', events: [{ id: 'e2', message: { jsonrpc: '2.0', id: 1, result: {} } }] }, 'the same stream only, priming events left out');
    assert.equal(await m.eventsAfter('long', 'nope'), undefined);
    await until(async () => (await store.pool.query(`SELECT 1 FROM mcp_sessions WHERE session_id = 'short' AND expires_at <= now()`)).rowCount, 10_000, 'the short session to expire');
    assert.equal(await m.renew('short', 3600), undefined, 'an expired session is not renewed');
    assert.equal((await m.renew('long', 3600))?.client.info && 'renewed', 'renewed');
    assert.equal(await m.sweep(3600), 1, 'the expired session (its row), no event yet');
    assert.equal((await store.pool.query(`SELECT 1 FROM mcp_sessions WHERE session_id = 'short'`)).rowCount, 0);
    await store.pool.query(`UPDATE mcp_events SET at = now() - interval '2 hours' WHERE event_id = 'e3'`);
    assert.equal(await m.sweep(3600), 1, 'the event older than resume_ttl_s');
    assert.equal(await m.streamOf('long', 'e3'), undefined);
    await m.remove('long');
    assert.equal((await store.pool.query(`SELECT 1 FROM mcp_events WHERE session_id = 'long'`)).rowCount, 0);
    // An event of a session that is gone is not stored (nothing could resume it).
    await m.saveEvent('long', 'e4', 's1', { jsonrpc: '2.0', id: 3, result: {} });
    assert.equal(await m.streamOf('long', 'e4'), undefined);
  } finally {
    await store.close();
  }
});
