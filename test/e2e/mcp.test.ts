/**
 * End-to-end: the bridge speaks MCP (docs/mcp.md). A CLI-started bridge and agent; MCP clients nobody here
 * wrote: the official SDK's `Client` + `StreamableHTTPClientTransport` (one on protocol 2025-11-25, one on
 * 2025-06-18). The user's prompt is answered through the agent's local endpoint, as the tray does.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { ids, processStack, Proc, ROOT, until } from '../helpers/stack.js';
import { spawn } from 'node:child_process';
import { connectUi, type UiClient } from '../consent/fixtures/ui-client.js';
import { SIM_ECHO, SimDevice } from '../../bench/sim-device.js';
import { METHODS } from '../../src/protocol/messages.js';

type Stack = Awaited<ReturnType<typeof processStack>>;
type Outcome = { state: string; call_id: string; replayed: boolean; output?: unknown; error?: { type: string; message: string; retryable: boolean; side_effects: string }; confirmation?: unknown };

const device2 = { workspace_id: ids.workspace_id, user_id: ids.user_id, device_id: 'dev_2' };
const device2Token = 'dt_' + randomBytes(12).toString('hex');
const otherWsToken = 'rt_' + randomBytes(12).toString('hex');

/** An SDK client on `path`; `version` pins the protocol version it asks for in initialize. */
async function connect(s: Stack, path: string, opts: { version?: string; name?: string; token?: string } = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: opts.name ?? 'mcp-e2e-client', version: '1.0.0' });
  const pin: typeof fetch = async (url, init) => {
    // The SDK client always offers its newest version; an older client offers 2025-06-18, and the server agrees to it.
    if (opts.version && typeof init?.body === 'string' && init.body.includes('"initialize"')) init = { ...init, body: init.body.replace(/"protocolVersion":"[^"]+"/, `"protocolVersion":"${opts.version}"`) };
    return fetch(url, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(s.url + path), { requestInit: { headers: { Authorization: `Bearer ${opts.token ?? s.tokens.runtime}` } }, fetch: pin });
  await client.connect(transport);
  return { client, transport };
}

const outcomeOf = (r: CallToolResult): Outcome => (r._meta as Record<string, Outcome>)['org.aios/outcome']!;
const text = (r: CallToolResult): string => (r.content as { type: string; text: string }[]).map((c) => c.text).join('\n');

/** A raw HTTP request (node:http, so Host and Origin are what the test says). */
function raw(url: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const r = httpRequest(url, { method: body === undefined ? 'GET' : 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
      let b = '';
      res.on('data', (d: Buffer) => (b += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: b }));
    });
    r.on('error', reject);
    r.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** `mcp-inspector-cli` (@modelcontextprotocol/inspector-cli), run to completion. */
async function inspector(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const build = join(ROOT, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build');
  // Its own build folder as the working directory: 1.0.3 looks for `../package.json` from the working directory
  // but imports it relative to its module, and fails anywhere else.
  const p = new Proc(spawn(process.execPath, [join(build, 'cli.js'), ...args], { cwd: build, stdio: ['ignore', 'pipe', 'pipe'] }));
  const code = await p.exited;
  return { code, out: p.out, err: p.err };
}

const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

describe('the bridge speaks MCP: SDK clients against a CLI-started bridge and agent', () => {
  let s: Stack;
  let ui: UiClient;
  before(async () => {
    s = await processStack({
      bridge: {
        mcp: { heartbeat_s: 1 },
        device_tokens: { [device2Token]: device2 },
        runtime_tokens: { [otherWsToken]: { workspace_id: 'ws_other', name: 'Other runtime' } },
      },
      agent: { identity: { ...ids, device_name: 'Front-desk PC' }, confirmations: { provider: 'ui', timeout_ms: 60_000 } },
    });
    ui = await connectUi(join(s.dir, 'agent'));
    await ui.call('control.ui.focus', { focused: true });
  });
  after(async () => {
    ui?.close();
    await s?.stop();
  });

  test('2025-11-25 client: tools/list from the descriptors, then device.info completes with structuredContent', async () => {
    const { client, transport } = await connect(s, `/v1/mcp/devices/${ids.device_id}`);
    try {
      assert.equal(transport.protocolVersion, '2025-11-25');
      const { tools } = await client.listTools();
      const info = tools.find((t) => t.name === 'device-info');
      assert.ok(info, tools.map((t) => t.name).join(','));
      assert.equal(info.title, 'Front-desk PC: Device information');
      assert.equal(info.inputSchema.type, 'object');
      assert.equal(info.annotations?.readOnlyHint, true);
      const confirm = tools.find((t) => t.name === 'diagnostics-confirm');
      assert.ok(confirm);
      for (const t of tools) assert.match(t.name, /^[A-Za-z0-9_-]{1,64}$/);
      const r = (await client.callTool({ name: 'device-info', arguments: {} })) as CallToolResult;
      assert.equal(r.isError, undefined, text(r));
      const o = outcomeOf(r);
      assert.equal(o.state, 'completed');
      assert.equal(o.replayed, false);
      assert.deepEqual(r.structuredContent, o.output);
      assert.match(text(r), /"functions"/);
      // The bridge's record of the call names the client as the claimed requester.
      const rec = await s.client.getCall(o.call_id);
      assert.equal(rec.state, 'completed');
    } finally {
      await client.close();
    }
  });

  test('2025-06-18 and 2025-03-26 clients: the server agrees to the older version; calls work', async () => {
    for (const version of ['2025-06-18', '2025-03-26']) {
      const { client, transport } = await connect(s, `/v1/mcp/devices/${ids.device_id}`, { version });
      try {
        assert.equal(transport.protocolVersion, version);
        const r = (await client.callTool({ name: 'diagnostics-echo', arguments: { value: version } })) as CallToolResult;
        assert.deepEqual(r.structuredContent, { value: version });
      } finally {
        await client.close();
      }
    }
  });

  test('a high-risk function: the user allows it through the local endpoint; progress says so; a retry with the same call_id replays', async () => {
    const { client } = await connect(s, `/v1/mcp/devices/${ids.device_id}`, { name: 'IDE assistant' });
    try {
      const callId = 'mcp-allow-' + randomBytes(4).toString('hex');
      const progress: Progress[] = [];
      const pending = client.callTool({ name: 'diagnostics-confirm', arguments: {}, _meta: { 'org.aios/call_id': callId } }, undefined, { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true, timeout: 30_000 });
      const prompt = await ui.note('control/notification.prompt', (v) => v['call_id'] === callId, 30_000);
      assert.equal((prompt['requester'] as { name?: string } | undefined)?.name, 'IDE assistant', JSON.stringify(prompt));
      await until(() => progress.some((p) => /Waiting for the user on Front-desk PC/.test(p.message ?? '')), 10_000, 'the waiting note as progress');
      await ui.call('control.prompts.answer', { prompt_id: prompt['prompt_id'], answer: 'allow_once' });
      const r = (await pending) as CallToolResult;
      assert.equal(r.isError, undefined, text(r));
      const o = outcomeOf(r);
      assert.equal(o.state, 'completed');
      assert.ok(o.confirmation, 'the outcome carries the confirmation');
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.progress > progress[i - 1]!.progress, 'progress strictly increases');
      // The same call_id again: nothing runs, the outcome is replayed.
      const again = (await client.callTool({ name: 'diagnostics-confirm', arguments: {}, _meta: { 'org.aios/call_id': callId } })) as CallToolResult;
      assert.equal(outcomeOf(again).replayed, true);
      assert.equal(outcomeOf(again).state, 'completed');
      assert.deepEqual((await ui.call('control.prompts.list')).prompts, [], 'no second prompt');
    } finally {
      await client.close();
    }
  });

  test('the user denies it: isError, user_rejected in the outcome, no structuredContent', async () => {
    const { client } = await connect(s, `/v1/mcp/devices/${ids.device_id}`);
    try {
      const callId = 'mcp-deny-' + randomBytes(4).toString('hex');
      const pending = client.callTool({ name: 'diagnostics-confirm', arguments: {}, _meta: { 'org.aios/call_id': callId } });
      const prompt = await ui.note('control/notification.prompt', (v) => v['call_id'] === callId, 30_000);
      await ui.call('control.prompts.answer', { prompt_id: prompt['prompt_id'], answer: 'deny' });
      const r = (await pending) as CallToolResult;
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent, undefined);
      const o = outcomeOf(r);
      assert.equal(o.error?.type, 'user_rejected');
      assert.equal(o.error?.side_effects, 'none');
      assert.match(text(r), /user_rejected/);
    } finally {
      await client.close();
    }
  });

  test('cancel: the SDK\'s abort sends notifications/cancelled and the call is cancelled; a retry with the call_id reads the outcome', async () => {
    const { client } = await connect(s, `/v1/mcp/devices/${ids.device_id}`);
    try {
      const callId = 'mcp-cancel-' + randomBytes(4).toString('hex');
      const ac = new AbortController();
      const pending = client.callTool({ name: 'diagnostics-wait', arguments: { ms: 60_000 }, _meta: { 'org.aios/call_id': callId } }, undefined, { signal: ac.signal, onprogress: () => undefined, resetTimeoutOnProgress: true, timeout: 20_000 });
      await until(async () => (await s.client.getCall(callId).catch(() => ({ state: '' }))).state === 'running', 15_000, 'running');
      ac.abort('changed my mind');
      await assert.rejects(pending);
      const rec = await s.client.waitTerminal(callId, 15_000);
      assert.equal(rec.outcome?.state, 'cancelled');
      const again = (await client.callTool({ name: 'diagnostics-wait', arguments: { ms: 60_000 }, _meta: { 'org.aios/call_id': callId } })) as CallToolResult;
      assert.equal(again.isError, true);
      assert.equal(outcomeOf(again).state, 'cancelled');
      assert.equal(outcomeOf(again).replayed, true);
    } finally {
      await client.close();
    }
  });

  test('heartbeat: a slow call sends progress every heartbeat_s with a strictly increasing value', async () => {
    const { client } = await connect(s, `/v1/mcp/devices/${ids.device_id}`);
    try {
      const progress: Progress[] = [];
      const r = (await client.callTool({ name: 'diagnostics-wait', arguments: { ms: 3500 } }, undefined, { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true, timeout: 30_000 })) as CallToolResult;
      assert.equal(outcomeOf(r).state, 'completed');
      assert.ok(progress.length >= 3, `got ${progress.length} progress notifications`);
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.progress > progress[i - 1]!.progress);
      assert.ok(progress.some((p) => /Running on Front-desk PC/.test(p.message ?? '')));
    } finally {
      await client.close();
    }
  });

  test('@modelcontextprotocol/inspector-cli lists and calls a device\'s tools', async () => {
    const base = ['--cli', `${s.url}/v1/mcp/devices/${ids.device_id}`, '--transport', 'http', '--header', `Authorization: Bearer ${s.tokens.runtime}`];
    const list = await inspector([...base, '--method', 'tools/list']);
    assert.equal(list.code, 0, list.err);
    const tools = (JSON.parse(list.out) as { tools: { name: string }[] }).tools.map((t) => t.name);
    assert.ok(tools.includes('device-info') && tools.includes('diagnostics-echo'), tools.join(','));
    const call = await inspector([...base, '--method', 'tools/call', '--tool-name', 'diagnostics-echo', '--tool-arg', 'value=from-inspector']);
    assert.equal(call.code, 0, call.err);
    const r = JSON.parse(call.out) as CallToolResult;
    assert.deepEqual(r.structuredContent, { value: 'from-inspector' });
    assert.equal(outcomeOf(r).state, 'completed');
  });

  test('malformed _meta and an unknown tool are JSON-RPC errors', async () => {
    const { client } = await connect(s, `/v1/mcp/devices/${ids.device_id}`);
    try {
      await assert.rejects(client.callTool({ name: 'no-such_tool', arguments: {} }), /Unknown tool/);
      await assert.rejects(client.callTool({ name: 'device-info', arguments: {}, _meta: { 'org.aios/timeout_ms': -1 } }), /org\.aios\/timeout_ms/);
      await assert.rejects(client.callTool({ name: 'device-info', arguments: {}, _meta: { 'org.aios/call_id': 'has space' } }), /org\.aios\/call_id/);
    } finally {
      await client.close();
    }
  });

  test('tokens and devices: 401 with WWW-Authenticate, 404 for an unknown or another workspace\'s device before any session; Origin and Host are checked', async () => {
    const u = `${s.url}/v1/mcp/devices/${ids.device_id}`;
    const none = await raw(u, {}, INIT);
    assert.equal(none.status, 401);
    assert.equal(none.headers['www-authenticate'], 'Bearer');
    assert.equal((await raw(u, { authorization: 'Bearer nope' }, INIT)).status, 401);
    assert.equal((await raw(`${s.url}/v1/mcp/devices/dev_none`, { authorization: `Bearer ${s.tokens.runtime}` }, INIT)).status, 404);
    const other = await raw(u, { authorization: `Bearer ${otherWsToken}` }, INIT);
    assert.equal(other.status, 404);
    assert.equal(other.headers['mcp-session-id'], undefined);
    assert.equal((await raw(u, { authorization: `Bearer ${s.tokens.runtime}`, origin: 'https://evil.example' }, INIT)).status, 403);
    assert.equal((await raw(u, { authorization: `Bearer ${s.tokens.runtime}`, host: 'evil.example' }, INIT)).status, 403);
    const ok = await raw(u, { authorization: `Bearer ${s.tokens.runtime}` }, INIT);
    assert.equal(ok.status, 200, ok.body);
    assert.ok(ok.headers['mcp-session-id']);
    assert.equal((await raw(u, { authorization: `Bearer ${s.tokens.runtime}`, 'mcp-session-id': 'no-such-session' }, { jsonrpc: '2.0', id: 2, method: 'tools/list' })).status, 404);
  });

  test('the workspace endpoint: tools by handle; list_changed when a second device connects and when it goes', async () => {
    const { client } = await connect(s, '/v1/mcp');
    const sim = new SimDevice({ url: s.url.replace(/^http/, 'ws') + '/v1/device', token: device2Token, identity: device2, protocolVersion: '1.2' });
    try {
      let changes = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
      const before = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(before.some((n) => /^d\d+-device-info$/.test(n)), before.join(','));
      const handle = before.find((n) => n.endsWith('-device-info'))!.split('-')[0]!;
      assert.ok(!before.some((n) => !n.startsWith(handle + '-')), 'only the online device is listed');
      // The handle maps back to the device.
      const r = (await client.callTool({ name: `${handle}-diagnostics-echo`, arguments: { value: 3 } })) as CallToolResult;
      assert.deepEqual(r.structuredContent, { value: 3 });
      await sim.connect();
      await until(() => changes >= 1, 15_000, 'list_changed after the second device connected');
      const withTwo = (await client.listTools()).tools.map((t) => t.name);
      const other = withTwo.find((n) => !n.startsWith(handle + '-'));
      assert.ok(other, withTwo.join(','));
      // The device changes its functions (tools_changed): the bridge re-reads them and says so.
      const h2 = other.split('-')[0]!;
      const c0 = changes;
      sim.o.functions = [SIM_ECHO, { ...SIM_ECHO, id: 'diagnostics.echo_twice', name: 'Echo twice' }];
      sim.ws!.send(JSON.stringify({ jsonrpc: '2.0', method: METHODS.toolsChanged, params: { revision: 2, added: [{ id: 'diagnostics.echo_twice', name: 'Echo twice' }], removed: [], updated: [] } }));
      await until(() => changes > c0, 15_000, 'list_changed after tools_changed');
      assert.ok((await client.listTools()).tools.some((t) => t.name === `${h2}-diagnostics-echo_twice`));
      const n = changes;
      sim.close();
      await until(() => changes > n, 15_000, 'list_changed after it went');
      const after = (await client.listTools()).tools.map((t) => t.name);
      assert.deepEqual(after.sort(), before.sort());
      // Its handle still names it: a call is refused as an isError result, not a JSON-RPC error.
      const gone = (await client.callTool({ name: other, arguments: { value: 1 } })) as CallToolResult;
      assert.equal(gone.isError, true);
      assert.equal(outcomeOf(gone).state, 'rejected');
      assert.equal(outcomeOf(gone).error?.type, 'device_offline');
    } finally {
      sim.close();
      await client.close();
    }
  });

  test('offline: a per-device listing marks the tools offline; the device going away mid-call ends unknown as an isError result', async () => {
    const { client } = await connect(s, `/v1/mcp/devices/${ids.device_id}`);
    try {
      const callId = 'mcp-offline-' + randomBytes(4).toString('hex');
      const pending = client.callTool({ name: 'diagnostics-wait', arguments: { ms: 60_000 }, _meta: { 'org.aios/call_id': callId } }, undefined, { onprogress: () => undefined, resetTimeoutOnProgress: true, timeout: 60_000 });
      await until(async () => (await s.client.getCall(callId).catch(() => ({ state: '' }))).state === 'running', 15_000, 'running');
      await s.agent.kill('SIGKILL');
      await s.online(false);
      const listed = (await client.listTools()).tools;
      assert.ok(listed.length > 0);
      assert.ok(listed.every((t) => (t.description ?? '').startsWith('Offline now: Front-desk PC')), listed[0]?.description);
      await s.startAgent();
      ui.close();
      ui = await connectUi(join(s.dir, 'agent'));
      await ui.call('control.ui.focus', { focused: true });
      // Today's bridge learns the outcome when the device is back (call.get at reconnect): unknown with
      // execution_interrupted. Protocol 1.2's bridge-ended `unknown` may end it earlier with another type: both
      // are `unknown` with possible side effects, which is what an MCP client must see.
      const r = (await pending) as CallToolResult;
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent, undefined);
      const o = outcomeOf(r);
      assert.equal(o.state, 'unknown');
      assert.equal(typeof o.error?.type, 'string');
      assert.equal(o.error?.side_effects, 'possible');
    } finally {
      await client.close();
    }
  });
});
