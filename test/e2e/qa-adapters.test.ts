/**
 * Adapters on a running agent, as the QA trial used them (issue 14): `keys import` and `adapters add --ca`
 * apply without a restart, `adapters refresh` exists, and a remote adapter that is down answers
 * `device_unavailable` naming the adapter (also after a restart), never `unknown_function`.
 * The bridge and the agent are CLI processes; the remote adapter is a real HTTPS server with a throwaway
 * certificate that only `--ca` makes trusted.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { signCard } from '../../src/protocol/card-sign.js';
import { callLocal, findRunningAgent } from '../../src/endpoint/local-client.js';
import { cliRun, ids, processStack, ROOT, tempDir, until } from '../helpers/stack.js';

const run = promisify(execFile);
type Stack = Awaited<ReturnType<typeof processStack>>;

describe('QA trial: adapters on a CLI-started agent', () => {
  let s: Stack;
  let dir: string;
  let server: Server;
  let origin: string;
  const data = () => join(s.dir, 'agent');
  const fnIds = async () => ((await s.client.device(ids.device_id))['functions'] as { id: string }[]).map((f) => f.id);

  before(async () => {
    dir = tempDir('aios-qa-adapters-');
    const adaptersDir = join(dir, 'adapters');
    mkdirSync(adaptersDir);
    // Signed with the example key, which this agent does not trust yet.
    cpSync(join(ROOT, 'examples/hello-adapter/org.example.hello'), join(adaptersDir, 'org.example.hello'), { recursive: true });
    // A manifest dropped loose into the folder, as the trial did: not an adapter, but never ignored silently.
    cpSync(join(ROOT, 'examples/hello-adapter/org.example.hello/tool.aios.yaml'), join(adaptersDir, 'stray.yaml'));
    // An installed adapter whose tool.aios.yaml the parser cannot read: its reason is listed in the user's language.
    mkdirSync(join(adaptersDir, 'org.example.unreadable'));
    writeFileSync(join(adaptersDir, 'org.example.unreadable', 'tool.aios.yaml'), 'tool:\n  id: org.example.unreadable\n  name: [Unreadable\nentry: index.mjs\n');
    await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1']);
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const publicJwk = { ...(await exportJWK(publicKey)), kid: 'qa-remote-1', alg: 'ES256' } as JWK;
    const card = await signCard(
      {
        adapter: { id: 'com.example.remote', name: 'Remote echo', version: '1.0.0', protocol_version: '1.0' },
        capabilities: {},
        skills: [{ id: 'remote.echo', name: 'Echo remotely', permission_level: 'low', capability_type: 'api', input_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false } }],
        endpoints: { rpc: '/rpc' },
      },
      { kid: 'qa-remote-1', alg: 'ES256', privateKey, publicJwk },
    );
    server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
      const send = (v: unknown) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(v));
      };
      if (req.url === '/.well-known/aios-adapter.json') return send(card);
      if (req.url === '/.well-known/jwks.json') return send({ keys: [publicJwk] });
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const m = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; params: { call_id: string; function: string; arguments: { text: string } } };
        send({ jsonrpc: '2.0', id: m.id, result: { call_id: m.params.call_id, function: m.params.function, state: 'completed', output: { echo: m.params.arguments.text }, error: null } });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
    s = await processStack({ agent: { adapters: { dirs: [adaptersDir], approved: { 'org.example.hello': { levels: { 'hello.greet': 'public' } } } }, policy: { 'remote.echo': 'allow' } } });
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await s.stop();
  });

  test('a loose manifest in an adapters folder is named in the log with what to do; built-in adapters state their capabilities', async () => {
    await until(() => /stray\.yaml/.test(s.agentLog()), 20_000, 'the log line about stray.yaml');
    const line = s.agentLog().split('\n').find((l) => l.includes('stray.yaml'))!;
    assert.match(line, /not loaded: an adapter is a folder: move this file to <adapter id>\/tool\.aios\.yaml/);
    const agent = (await findRunningAgent(data()))!;
    const info = (await callLocal(agent, 'aios/registry.info', { adapter_id: 'device' })) as { capabilities: Record<string, boolean> };
    assert.deepEqual(info.capabilities, { streaming: false, batch_operations: false, async_tasks: true, push_notifications: true, state_transition_history: true });
    assert.ok(existsSync(join(data(), 'endpoint.json')));
  });

  test('keys import reaches the running agent: an adapter signed with the imported key loads without a restart', async () => {
    const before = await cliRun(['adapters', 'list', '--data-dir', data(), '--json']);
    const hello = (JSON.parse(before.out) as { id: string; status: string; reason?: string }[]).find((a) => a.id === 'org.example.hello');
    assert.equal(hello?.status, 'unavailable', before.out);
    // Asked of the running agent, the reasons come back with their catalogue messages and are said in Chinese.
    const zh = await cliRun(['adapters', 'list', '--data-dir', data()], { LC_ALL: 'zh_CN.UTF-8' });
    assert.equal(zh.code, 0, zh.err);
    assert.match(zh.out, /✗ org\.example\.hello .*\n {4}签名被拒绝：.*no trusted key with id example-hello-2026/);
    assert.match(zh.out, /✗ org\.example\.unreadable .*\n {4}无法读取 tool\.aios\.yaml 第 4 行第 1 列：\S/);
    const en = await cliRun(['adapters', 'list', '--data-dir', data()]);
    assert.match(en.out, /✗ org\.example\.unreadable .*\n {4}tool\.aios\.yaml line 4, column 1 could not be read: \S/);
    const r = await cliRun(['keys', 'import', join(ROOT, 'examples/hello-adapter/keys/EXAMPLE-ONLY.jwks'), '--data-dir', data()]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /the running agent rescanned its adapters/);
    await until(async () => (await fnIds()).includes('hello.greet'), 20_000, 'the bridge learns hello.greet');
    const { record } = await s.client.call('hello.greet', { name: 'Ada' });
    assert.equal(record.outcome?.state, 'completed', JSON.stringify(record.outcome?.error));
  });

  test('adapters add --ca applies to the running agent; once the adapter is down its skill answers device_unavailable, also after a restart', async () => {
    // The running agent refuses an http address; its reason comes back with the RPC error and is said in Chinese.
    const plain = await cliRun(['adapters', 'add', origin.replace('https:', 'http:'), '--data-dir', data()], { LC_ALL: 'zh_CN.UTF-8' });
    assert.equal(plain.code, 1, plain.out);
    assert.match(plain.err, /^✗ 远程适配器必须通过 https 提供$/m);
    const add = await cliRun(['adapters', 'add', origin, '--ca', join(dir, 'cert.pem'), '--data-dir', data()]);
    assert.equal(add.code, 0, add.err);
    assert.match(add.out, /added com\.example\.remote to the running agent \(available\)/);
    assert.doesNotMatch(add.out + add.err, /adapters refresh`? *$/m);
    await until(async () => (await fnIds()).includes('remote.echo'), 20_000, 'the bridge learns remote.echo');
    const ok = await s.client.call('remote.echo', { text: 'hi' });
    assert.equal(ok.record.outcome?.state, 'completed', JSON.stringify(ok.record.outcome?.error));
    assert.deepEqual(ok.record.outcome?.output, { echo: 'hi' });

    // The adapter goes down; a rescan finds its card unreachable.
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    const refresh = await cliRun(['adapters', 'refresh', '--data-dir', data()]);
    assert.equal(refresh.code, 0, refresh.err);
    const down = await s.client.call('remote.echo', { text: 'hi' });
    assert.equal(down.record.outcome?.error?.type, 'device_unavailable', JSON.stringify(down.record.outcome));
    assert.equal((down.record.outcome?.error?.details as { adapter?: string } | undefined)?.adapter, 'com.example.remote');
    assert.match(down.record.outcome?.error?.message ?? '', /com\.example\.remote/);

    // A restart while it is still down: the stored card keeps the skill, still unavailable rather than unknown.
    await s.agent.kill('SIGTERM');
    await s.online(false);
    await s.startAgent();
    const list = await cliRun(['adapters', 'list', '--data-dir', data(), '--json']);
    const remote = (JSON.parse(list.out) as { id: string; status: string; reason?: string }[]).find((a) => a.id === 'com.example.remote');
    assert.equal(remote?.status, 'unavailable', list.out);
    assert.match(remote?.reason ?? '', /could not be fetched/);
    const zh = await cliRun(['adapters', 'list', '--data-dir', data()], { LC_ALL: 'zh_CN.UTF-8' });
    assert.match(zh.out, /✗ com\.example\.remote .*\n {4}无法获取卡片（该地址上没有可用的 https 应答）/);
    const after = await s.client.call('remote.echo', { text: 'hi' });
    assert.equal(after.record.outcome?.error?.type, 'device_unavailable', JSON.stringify(after.record.outcome));
    assert.equal((after.record.outcome?.error?.details as { adapter?: string } | undefined)?.adapter, 'com.example.remote');
  });
});
