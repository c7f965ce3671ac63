/**
 * MCP servers as adapters (issue 35), through a CLI-started bridge and agent. Two real MCP servers nobody
 * here wrote, `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem`, are
 * bundled into signed adapter folders (an adapter's code must be self-contained) and registered through
 * `tool.aios.yaml` with the system's node as `command` (its SHA-256 in the manifest). What they cannot
 * produce (a tool without annotations, a crash mid-call, output that breaks its schema, list_changed) comes
 * from a small MCP server this test writes: a plain JSON-RPC-over-stdio script, written here on purpose.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { signAdapterDir } from '../../src/discovery/adapter-tools.js';
import type { CardSigningKey } from '../../src/protocol/card-sign.js';
import { cliRun, ids, processStack, ROOT, tempDir, until } from '../helpers/stack.js';
import { connectUi, type UiClient } from '../consent/fixtures/ui-client.js';
import { sseEvents } from '../helpers/sse.js';

const run = promisify(execFile);
type Stack = Awaited<ReturnType<typeof processStack>>;

const NODE = '/usr/bin/node';
const NODE_SHA = createHash('sha256').update(readFileSync(NODE)).digest('hex');
/** Set in the agent's environment: no adapter process may see it. */
const SECRET = 'secret-' + Math.random().toString(36).slice(2);

/** Bundles an installed package's entry into `<dir>/server.mjs` (an adapter folder holds all its code). */
async function bundle(entry: string, dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  await run(join(ROOT, 'node_modules/.bin/esbuild'), [
    join(ROOT, 'node_modules', entry), '--bundle', '--platform=node', '--format=esm', `--outfile=${join(dir, 'server.mjs')}`, '--log-level=error',
    "--banner:js=import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  ]);
}

function manifest(dir: string, id: string, name: string, mcp: Record<string, unknown>): void {
  writeFileSync(join(dir, 'tool.aios.yaml'), `tool:\n  id: ${id}\n  name: ${name}\n  version: 1.0.0\nmcp: ${JSON.stringify(mcp)}\n`);
}

/**
 * The test's own MCP server (hand-written JSON-RPC over stdio, no SDK): `plain` has no annotations,
 * `crash` exits mid-call, `bad_output` breaks its outputSchema, `grow` adds a tool and sends list_changed,
 * `wait` waits for the ms it is given, `images` answers one image past 256 KiB and one under it.
 */
const FIXTURE_SERVER = String.raw`
import { createInterface } from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const obj = { type: 'object' };
const tools = [
  { name: 'plain', description: 'No annotations at all.', inputSchema: obj },
  { name: 'crash', inputSchema: obj, annotations: { readOnlyHint: true } },
  { name: 'bad_output', inputSchema: obj, outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }, annotations: { readOnlyHint: true } },
  { name: 'grow', inputSchema: obj },
  { name: 'wait', inputSchema: { type: 'object', properties: { ms: { type: 'number' } } }, annotations: { readOnlyHint: true } },
  { name: 'images', inputSchema: obj, annotations: { readOnlyHint: true } },
];
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') return send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'fixture', version: '1.0.0' } } });
  if (m.method === 'tools/list') return send({ id: m.id, result: { tools } });
  if (m.method !== 'tools/call') return m.id === undefined ? undefined : send({ id: m.id, result: {} });
  const name = m.params.name;
  if (name === 'plain') return send({ id: m.id, result: { content: [{ type: 'text', text: 'plain ran' }] } });
  if (name === 'crash') process.exit(3);
  if (name === 'bad_output') return send({ id: m.id, result: { content: [], structuredContent: { n: 'not a number' } } });
  if (name === 'grow') {
    if (!tools.some((t) => t.name === 'Grown-Tool')) tools.push({ name: 'Grown-Tool', inputSchema: obj });
    send({ method: 'notifications/tools/list_changed' });
    return send({ id: m.id, result: { content: [{ type: 'text', text: 'grown' }] } });
  }
  // One image past 256 KiB (decoded) and one under it.
  if (name === 'images') return send({ id: m.id, result: { content: [{ type: 'image', mimeType: 'image/png', data: Buffer.alloc(300 * 1024, 7).toString('base64') }, { type: 'image', mimeType: 'image/png', data: Buffer.alloc(1024, 7).toString('base64') }] } });
  if (name === 'wait') return setTimeout(() => send({ id: m.id, result: { content: [{ type: 'text', text: 'waited' }] } }), m.params.arguments.ms);
});
`;

describe('MCP servers as adapters, through a CLI-started bridge and agent', () => {
  let s: Stack;
  let ui: UiClient;
  let dir: string;
  let scratch: string;
  const data = () => join(s.dir, 'agent');
  const fnIds = async () => ((await s.client.device(ids.device_id))['functions'] as { id: string }[]).map((f) => f.id);
  const call = (fn: string, args: Record<string, unknown>, opts: { timeout_ms?: number; wait?: boolean } = {}) => s.client.call(fn, args, { wait_timeout_ms: 60_000, ...opts });

  before(async () => {
    dir = tempDir('aios-mcp-adapters-');
    const adapters = join(dir, 'adapters');
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const publicJwk = { ...(await exportJWK(publicKey)), kid: 'mcp-test-1', alg: 'ES256' } as JWK;
    const key: CardSigningKey = { kid: 'mcp-test-1', alg: 'ES256', privateKey, publicJwk };
    writeFileSync(join(dir, 'trusted.jwks'), JSON.stringify({ keys: [publicJwk] }));

    const everything = join(adapters, 'everything');
    await bundle('@modelcontextprotocol/server-everything/dist/index.js', everything);
    manifest(everything, 'org.test.everything', 'Everything', { command: NODE, command_sha256: NODE_SHA, args: ['server.mjs', 'stdio'], prefix: 'everything' });
    const files = join(adapters, 'files');
    await bundle('@modelcontextprotocol/server-filesystem/dist/index.js', files);
    // Its one allowed folder is its own work folder ({data}); the second one says "/" (all it can see).
    manifest(files, 'org.test.files', 'Files over MCP', { command: NODE, command_sha256: NODE_SHA, args: ['server.mjs', '{data}'], prefix: 'mcpfiles' });
    const rootfs = join(adapters, 'rootfs');
    mkdirSync(rootfs);
    writeFileSync(join(rootfs, 'server.mjs'), readFileSync(join(files, 'server.mjs')));
    manifest(rootfs, 'org.test.rootfs', 'Whole disk over MCP', { command: NODE, command_sha256: NODE_SHA, args: ['server.mjs', '/'], prefix: 'rootfs' });
    const fixture = join(adapters, 'fixture');
    mkdirSync(fixture);
    writeFileSync(join(fixture, 'server.mjs'), FIXTURE_SERVER);
    manifest(fixture, 'org.test.fixture', 'Fixture', { command: NODE, command_sha256: NODE_SHA, args: ['server.mjs'], prefix: 'fixture' });
    // Refused: a command that fetches code at run time, and a system path whose hash is not the one signed.
    const npx = join(adapters, 'npx');
    mkdirSync(npx);
    writeFileSync(join(npx, 'server.mjs'), '');
    manifest(npx, 'org.test.npx', 'Fetches', { command: '/usr/bin/npx', command_sha256: NODE_SHA, args: ['-y', '@modelcontextprotocol/server-everything'], prefix: 'npx' });
    const wrongHash = join(adapters, 'wronghash');
    mkdirSync(wrongHash);
    writeFileSync(join(wrongHash, 'server.mjs'), FIXTURE_SERVER);
    manifest(wrongHash, 'org.test.wronghash', 'Wrong hash', { command: NODE, command_sha256: '0'.repeat(64), args: ['server.mjs'], prefix: 'wronghash' });
    for (const d of [everything, files, rootfs, fixture, npx, wrongHash]) await signAdapterDir(d, key);

    scratch = tempDir('aios-mcp-scratch-');
    writeFileSync(join(scratch, 'outside.txt'), 'outside');
    process.env['ADAPTERS_TEST_SECRET'] = SECRET;
    s = await processStack({
      agent: {
        // Approved by the admin config at the default level (high): the approval flow has its own test (adapter-approval.test.ts).
        adapters: { dirs: [adapters], approved: Object.fromEntries(['everything', 'files', 'rootfs', 'fixture', 'npx', 'wronghash'].map((n) => [`org.test.${n}`, {}])) },
        trust: { keys: [join(dir, 'trusted.jwks')] },
        confirmations: { provider: 'ui', timeout_ms: 60_000 },
        policy: Object.fromEntries(['everything.get_env', 'everything.get_structured_content', 'everything.trigger_long_running_operation', 'mcpfiles.read_text_file', 'mcpfiles.write_file', 'rootfs.read_text_file', 'fixture.plain', 'fixture.crash', 'fixture.bad_output', 'fixture.grow', 'fixture.wait', 'fixture.grown_tool', 'fixture.images'].map((f) => [f, 'allow'])),
      },
    });
    ui = await connectUi(data());
    await ui.call('control.ui.focus', { focused: true });
  });
  after(async () => {
    delete process.env['ADAPTERS_TEST_SECRET'];
    ui?.close();
    await s?.stop();
  });

  test('the tools of each server are functions <prefix>.<tool> on the bridge; npx and a command whose hash differs are refused', async () => {
    await until(async () => (await fnIds()).includes('fixture.plain'), 60_000, 'the bridge learns the MCP tools');
    const fns = await fnIds();
    for (const f of ['everything.echo', 'everything.get_sum', 'everything.get_env', 'mcpfiles.read_text_file', 'rootfs.read_text_file', 'fixture.bad_output']) assert.ok(fns.includes(f), `${f} in ${fns.join(' ')}`);
    const list = await cliRun(['adapters', 'list', '--data-dir', data(), '--json']);
    const byId = new Map((JSON.parse(list.out) as { id: string; status: string; reason?: string }[]).map((a) => [a.id, a]));
    assert.equal(byId.get('org.test.everything')?.status, 'available');
    assert.equal(byId.get('org.test.npx')?.status, 'unavailable');
    assert.match(byId.get('org.test.npx')?.reason ?? '', /fetches code at run time/);
    assert.match(byId.get('org.test.wronghash')?.reason ?? '', /does not match the SHA-256 the manifest records/);
    // Published as the server sent it: a zod server's draft-07 schema, and risk from its annotations.
    const sum = await s.client.descriptor(ids.device_id, 'everything.get_sum');
    assert.equal((sum['input_schema'] as { $schema?: string }).$schema, 'http://json-schema.org/draft-07/schema#');
    assert.equal(sum['permission_level'], 'high');
    assert.deepEqual(sum['risk'], { read_only: true, destructive: false, idempotent: true, physical: false });
    // No annotations: destructive.
    const plain = await s.client.descriptor(ids.device_id, 'fixture.plain');
    assert.deepEqual(plain['risk'], { read_only: false, destructive: true, idempotent: false, physical: false });
  });

  test('consent is asked by default, with the generic sentence; allow once runs echo, deny never runs get_sum', async () => {
    const prompt = (callId: string) => ui.note('control/notification.prompt', (v) => v['call_id'] === callId, 60_000);
    const echo = await call('everything.echo', { message: 'hi' }, { wait: false });
    const seen = await prompt(echo.record.call_id);
    assert.match(JSON.stringify(seen), /Run echo of Everything/);
    await ui.call('control.prompts.answer', { prompt_id: seen['prompt_id'], answer: 'allow_once' });
    const done = await s.client.waitTerminal(echo.record.call_id, 60_000);
    assert.equal(done.outcome?.state, 'completed', JSON.stringify(done.outcome));
    assert.deepEqual(done.outcome?.output, { content: [{ type: 'text', text: 'Echo: hi' }] });
    assert.equal(done.outcome?.output_valid, true);

    const sum = await call('everything.get_sum', { a: 2, b: 3 }, { wait: false });
    const asked = await prompt(sum.record.call_id);
    await ui.call('control.prompts.answer', { prompt_id: asked['prompt_id'], answer: 'deny' });
    const denied = await s.client.waitTerminal(sum.record.call_id, 60_000);
    assert.equal(denied.outcome?.state, 'rejected');
    assert.equal(denied.outcome?.error?.type, 'user_rejected');
  });

  test('invalid arguments are refused by the agent against the published draft-07 schema', async () => {
    const r = await call('everything.get_sum', { a: 'two', b: 3 });
    assert.equal(r.record.outcome?.error?.type, 'invalid_arguments', JSON.stringify(r.record.outcome));
  });

  test("get-env shows none of the agent's environment (no tokens, no AIOS_*, not the test's secret)", async () => {
    const r = await call('everything.get_env', {});
    assert.equal(r.record.outcome?.state, 'completed', JSON.stringify(r.record.outcome));
    const env = JSON.parse((r.record.outcome?.output as { content: { text: string }[] }).content[0]!.text) as Record<string, string>;
    assert.ok(!JSON.stringify(env).includes(SECRET), JSON.stringify(env));
    assert.deepEqual(Object.keys(env).filter((k) => k.startsWith('AIOS_') || /TOKEN|SECRET|KEY/i.test(k)), []);
    assert.equal(env['HOME'], '/adapter/data');
  });

  test('structured output is the output, valid against the outputSchema the server published', async () => {
    const r = await call('everything.get_structured_content', { location: 'New York' });
    assert.equal(r.record.outcome?.state, 'completed', JSON.stringify(r.record.outcome));
    assert.equal(r.record.outcome?.output_valid, true);
    assert.equal(typeof (r.record.outcome?.output as { temperature?: unknown }).temperature, 'number');
  });

  test('server-filesystem: refused outside its own folder by itself, and outside the sandbox even when it allows "/"', async () => {
    const w = await call('mcpfiles.write_file', { path: '/adapter/data/note.txt', content: 'kept' });
    assert.equal(w.record.outcome?.state, 'completed', JSON.stringify(w.record.outcome));
    const own = await call('mcpfiles.read_text_file', { path: '/adapter/data/note.txt' });
    assert.match(JSON.stringify(own.record.outcome?.output), /kept/);
    // Its work folder is <data_dir>/adapter-data/<id> on the disk.
    assert.equal(readFileSync(join(data(), 'adapter-data', 'org.test.files', 'note.txt'), 'utf8'), 'kept');
    const outside = await call('mcpfiles.read_text_file', { path: join(scratch, 'outside.txt') });
    assert.equal(outside.record.outcome?.state, 'failed');
    assert.equal(outside.record.outcome?.error?.type, 'execution_failed');
    assert.match(outside.record.outcome?.error?.message ?? '', /denied|outside/i);
    // "/" allowed by the server: the sandbox still shows none of the agent's data folder or the test's files.
    for (const p of [join(data(), 'local-token'), join(data(), 'device-key.json'), join(scratch, 'outside.txt')]) {
      const r = await call('rootfs.read_text_file', { path: p });
      assert.equal(r.record.outcome?.state, 'failed', `${p}: ${JSON.stringify(r.record.outcome)}`);
      assert.match(r.record.outcome?.error?.message ?? '', /ENOENT|no such file/i);
    }
  });

  test('output that breaks its schema: completed with output_valid false (isError → execution_failed is the server-filesystem case above)', async () => {
    const r = await call('fixture.bad_output', {});
    assert.equal(r.record.outcome?.state, 'completed', JSON.stringify(r.record.outcome));
    assert.equal(r.record.outcome?.output_valid, false);
  });

  test('notifications/progress from the server become the call\'s progress notes (the bridge\'s progress events)', async () => {
    const started = await call('everything.trigger_long_running_operation', { duration: 2, steps: 4 }, { wait: false, timeout_ms: 60_000 });
    const stream = sseEvents(`${s.url}/v1/calls/${started.record.call_id}/events`, s.tokens.runtime);
    const events = await stream.done;
    const progress = events.filter((e) => e.event === 'progress').map((e) => e.data);
    assert.ok(progress.length >= 2, `progress events: ${JSON.stringify(events)}`);
    assert.ok(progress.every((p) => p['total'] === 4 && typeof p['progress'] === 'number' && p['progress'] >= 1 && p['progress'] <= 4), JSON.stringify(progress));
    assert.equal((await s.client.getCall(started.record.call_id)).outcome?.state, 'completed');
  });

  test('an image past 256 KiB goes through the blob store ({ type, mimeType, blob }); a smaller one stays inline', async () => {
    const r = await call('fixture.images', {});
    assert.equal(r.record.outcome?.state, 'completed', JSON.stringify(r.record.outcome?.error));
    const [big, small] = (r.record.outcome?.output as { content: Record<string, unknown>[] }).content;
    assert.equal(big?.['data'], undefined, 'the large image is not inline');
    assert.equal(big?.['mimeType'], 'image/png');
    const ref = big?.['blob'] as { size: number; sha256: string; media_type: string };
    assert.equal(ref.size, 300 * 1024);
    assert.equal(ref.sha256, createHash('sha256').update(Buffer.alloc(300 * 1024, 7)).digest('hex'));
    assert.equal(ref.media_type, 'image/png');
    assert.deepEqual(small, { type: 'image', mimeType: 'image/png', data: Buffer.alloc(1024, 7).toString('base64') });
    assert.equal(r.record.outcome?.output_valid, true);
  });

  test('list_changed: a tool the server adds becomes a function on the bridge (tools_changed)', async () => {
    const r = await call('fixture.grow', {});
    assert.equal(r.record.outcome?.state, 'completed', JSON.stringify(r.record.outcome));
    await until(async () => (await fnIds()).includes('fixture.grown_tool'), 30_000, 'fixture.grown_tool on the bridge');
  });

  test('a crash mid-call: that call and the others running in the process end unknown/execution_interrupted; the process starts again', async () => {
    const waiting = await call('fixture.wait', { ms: 120_000 }, { wait: false, timeout_ms: 120_000 });
    await until(async () => (await s.client.getCall(waiting.record.call_id)).state === 'running', 30_000, 'the wait call running');
    const crash = await call('fixture.crash', {});
    assert.equal(crash.record.outcome?.state, 'unknown', JSON.stringify(crash.record.outcome));
    assert.equal(crash.record.outcome?.error?.type, 'execution_interrupted');
    const other = await s.client.waitTerminal(waiting.record.call_id, 30_000);
    assert.equal(other.outcome?.state, 'unknown', JSON.stringify(other.outcome));
    assert.equal(other.outcome?.error?.type, 'execution_interrupted');
    const again = await call('fixture.plain', {});
    assert.equal(again.record.outcome?.state, 'completed', JSON.stringify(again.record.outcome));
  });

  test('the long-running operation ignores cancel: the timeout ends it, the process is killed after the grace, the other call in it ends unknown', async () => {
    const other = await call('everything.trigger_long_running_operation', { duration: 100, steps: 100 }, { wait: false, timeout_ms: 120_000 });
    await until(async () => (await s.client.getCall(other.record.call_id)).state === 'running', 30_000, 'the first operation running');
    const timed = await call('everything.trigger_long_running_operation', { duration: 100, steps: 100 }, { timeout_ms: 1500 });
    assert.equal(timed.record.outcome?.state, 'failed', JSON.stringify(timed.record.outcome));
    assert.equal(timed.record.outcome?.error?.type, 'timeout');
    const ended = await s.client.waitTerminal(other.record.call_id, 30_000);
    assert.equal(ended.outcome?.state, 'unknown', JSON.stringify(ended.outcome));
    assert.equal(ended.outcome?.error?.type, 'execution_interrupted');
    assert.match(s.agentLog(), /did not end a cancelled call within the grace/);
    const again = await call('everything.get_env', {});
    assert.equal(again.record.outcome?.state, 'completed', JSON.stringify(again.record.outcome));
  });
});
