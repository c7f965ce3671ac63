/**
 * A new local adapter folder waits for approval (issue 35), through a CLI-started bridge and agent: it is
 * not offered until `aios-device adapters approve` (to the running agent, or written for the next start
 * when none runs); `adapters pending` shows what a person decides on; the admin config approves and wins;
 * an approval holds for the key it was given for; a broken approvals file is reported, never overwritten.
 * The adapters are the example adapter, unchanged (signed with the example key), and a copy of it under
 * another id, signed here.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { signAdapterDir } from '../../src/discovery/adapter-tools.js';
import type { CardSigningKey } from '../../src/protocol/card-sign.js';
import { cliRun, ids, processStack, ROOT, tempDir, until } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;
const EXAMPLE = join(ROOT, 'examples/hello-adapter/org.example.hello');

async function key(kid: string): Promise<CardSigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { kid, alg: 'ES256', privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256' } as JWK };
}

describe('a new adapter folder waits for approval (CLI-started bridge and agent)', () => {
  let s: Stack;
  let dir: string;
  let other: CardSigningKey;
  let hello: string;
  const data = () => join(s.dir, 'agent');
  const file = () => join(data(), 'adapter-approvals.json');
  const fnIds = async () => ((await s.client.device(ids.device_id))['functions'] as { id: string }[]).map((f) => f.id);
  const pending = async () => {
    const r = await cliRun(['adapters', 'pending', '--data-dir', data(), '--json']);
    assert.equal(r.code, 0, r.err);
    return JSON.parse(r.out) as { id: string; folder: string; signer: string | null; functions: { id: string; claimed_level?: string; risk?: Record<string, boolean> }[] | null }[];
  };

  before(async () => {
    dir = tempDir('aios-approval-');
    const adapters = join(dir, 'adapters');
    mkdirSync(adapters);
    hello = join(adapters, 'org.example.hello');
    cpSync(EXAMPLE, hello, { recursive: true });
    // The same code under another id, approved by the admin config.
    const admin = join(adapters, 'admin');
    cpSync(EXAMPLE, admin, { recursive: true });
    writeFileSync(join(admin, 'tool.aios.yaml'), readFileSync(join(EXAMPLE, 'tool.aios.yaml'), 'utf8').replaceAll('org.example.hello', 'org.test.admin').replaceAll('hello.greet', 'admin.greet'));
    writeFileSync(join(admin, 'index.mjs'), readFileSync(join(EXAMPLE, 'index.mjs'), 'utf8').replaceAll('hello.greet', 'admin.greet'));
    rmSync(join(admin, 'adapter.json'));
    other = await key('approval-test-1');
    await signAdapterDir(admin, other);
    writeFileSync(join(dir, 'trusted.jwks'), JSON.stringify({ keys: [other.publicJwk] }));
    s = await processStack({
      agent: {
        adapters: { dirs: [adapters], approved: { 'org.test.admin': { levels: { 'admin.greet': 'public' } } } },
        trust: { keys: [join(dir, 'trusted.jwks'), join(ROOT, 'examples/hello-adapter/keys/EXAMPLE-ONLY.jwks')] },
      },
    });
  });
  after(async () => {
    await s?.stop();
  });

  test('the new folder is not offered and is listed by adapters pending (folder, signer, functions, risk), in Chinese too; the admin-approved one runs', async () => {
    await until(async () => (await fnIds()).includes('admin.greet'), 20_000, 'the admin-approved adapter is offered');
    assert.ok(!(await fnIds()).includes('hello.greet'), 'a waiting adapter offers nothing');
    const list = await pending();
    assert.deepEqual(list.map((a) => a.id), ['org.example.hello']);
    assert.equal(list[0]!.folder, hello);
    assert.equal(list[0]!.signer, 'example-hello-2026');
    assert.deepEqual(list[0]!.functions, [{ id: 'hello.greet', name: 'Greet someone', claimed_level: 'public', risk: { read_only: true, destructive: false, idempotent: true, physical: false } }]);
    const en = await cliRun(['adapters', 'pending', '--data-dir', data()]);
    assert.match(en.out, /⏳ org\.example\.hello 1\.0\.0 .*waiting for approval/);
    assert.match(en.out, /signed by key example-hello-2026/);
    assert.match(en.out, /hello\.greet {2}Greet someone {2}\(card claims public; read-only, idempotent\)/);
    const zh = await cliRun(['adapters', 'pending', '--data-dir', data()], { LC_ALL: 'zh_CN.UTF-8' });
    assert.match(zh.out, /等待批准/);
    assert.match(zh.out, /签名密钥：example-hello-2026/);
    const all = JSON.parse((await cliRun(['adapters', 'list', '--data-dir', data(), '--json'])).out) as { id: string; status: string; reason?: string }[];
    assert.equal(all.find((a) => a.id === 'org.example.hello')?.status, 'unavailable');
    assert.match(all.find((a) => a.id === 'org.example.hello')?.reason ?? '', /waiting for approval/);
    // `status` (through the control API's status) names it too.
    const st = await cliRun(['status', '--data-dir', data(), '--bridge', s.url, '--json']);
    assert.deepEqual((JSON.parse(st.out) as { agent: { adapters?: unknown } }).agent.adapters, { unsandboxed: [], pending: ['org.example.hello'] });
    assert.match((await cliRun(['status', '--data-dir', data(), '--bridge', s.url])).out, /new adapters waiting for approval: org\.example\.hello/);
    // The hello adapter's code never ran: its process would have logged "hello adapter ready".
    assert.equal(s.agentLog().match(/hello adapter ready/g)?.length ?? 0, 1, 'only the admin-approved copy started');
  });

  test('adapters approve refuses a bad --level, a function the adapter does not have, and an adapter the admin config approves, each saying why', async () => {
    const bad = await cliRun(['adapters', 'approve', 'org.example.hello', '--level', 'hello.greet=lowest', '--data-dir', data()]);
    assert.equal(bad.code, 1, bad.out);
    assert.match(bad.err, /--level hello\.greet=lowest is not <function>=<level>/);
    const unknown = await cliRun(['adapters', 'approve', 'org.example.hello', '--level', 'hello.wave=public', '--data-dir', data()]);
    assert.equal(unknown.code, 1, unknown.out);
    assert.match(unknown.err, /adapter org\.example\.hello has no function hello\.wave \(its functions: hello\.greet\)/);
    const zh = await cliRun(['adapters', 'approve', 'org.test.admin', '--data-dir', data()], { LC_ALL: 'zh_CN.UTF-8' });
    assert.equal(zh.code, 1, zh.out);
    assert.match(zh.err, /适配器 org\.test\.admin 已由代理配置（adapters\.approved）批准/);
    const none = await cliRun(['adapters', 'approve', 'org.example.nothing', '--data-dir', data()]);
    assert.equal(none.code, 1, none.out);
    assert.match(none.err, /org\.example\.nothing is not a local adapter folder that can be approved/);
    assert.throws(() => statSync(file()), 'nothing was written');
  });

  test('adapters approve reaches the running agent: the adapter runs at once, at the chosen level; the choice is kept in adapter-approvals.json (0600)', async () => {
    const r = await cliRun(['adapters', 'approve', 'org.example.hello', '--level', 'hello.greet=public', '--data-dir', data()]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /approved org\.example\.hello; the running agent loaded it \(available, 1 functions\)/);
    await until(async () => (await fnIds()).includes('hello.greet'), 20_000, 'the bridge learns hello.greet');
    assert.equal((await s.client.descriptor(ids.device_id, 'hello.greet'))['permission_level'], 'public');
    const { record } = await s.client.call('hello.greet', { name: 'Ada' });
    assert.equal(record.outcome?.state, 'completed', JSON.stringify(record.outcome?.error));
    assert.deepEqual(await pending(), []);
    const kept = JSON.parse(readFileSync(file(), 'utf8')) as { adapters: Record<string, { signer: string; levels: Record<string, string> }> };
    assert.equal(kept.adapters['org.example.hello']?.signer, 'example-hello-2026');
    assert.deepEqual(kept.adapters['org.example.hello']?.levels, { 'hello.greet': 'public' });
    assert.equal(statSync(file()).mode & 0o777, 0o600);
  });

  test('signed by another key, the same id waits again; approved while no agent runs, it runs at the next start (at high: no level chosen)', async () => {
    await signAdapterDir(hello, other);
    await until(async () => (await pending()).some((a) => a.id === 'org.example.hello' && a.signer === 'approval-test-1'), 20_000, 'the re-signed adapter waits');
    await until(async () => !(await fnIds()).includes('hello.greet'), 20_000, 'hello.greet is withdrawn');

    await s.agent.kill('SIGKILL');
    const r = await cliRun(['adapters', 'approve', 'org.example.hello', '--config', s.agentConfig]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /approved org\.example\.hello; no agent runs with .*: it loads the adapter when it starts/);
    await s.startAgent();
    await until(async () => (await fnIds()).includes('hello.greet'), 20_000, 'hello.greet after the restart');
    assert.equal((await s.client.descriptor(ids.device_id, 'hello.greet'))['permission_level'], 'high', 'a level nobody chose is high, whatever the card claims');
  });

  test('a broken approvals file is reported and never overwritten; until it is fixed only the admin config approves', async () => {
    writeFileSync(file(), '{ "adapters": ');
    const r = await cliRun(['adapters', 'refresh', '--data-dir', data()]);
    assert.equal(r.code, 0, r.err);
    await until(async () => !(await fnIds()).includes('hello.greet'), 20_000, 'hello.greet is withdrawn');
    assert.ok((await fnIds()).includes('admin.greet'));
    const p = await cliRun(['adapters', 'pending', '--data-dir', data()]);
    assert.match(p.err, /the adapter approvals file .*adapter-approvals\.json is not JSON/);
    assert.match(p.out, /⏳ org\.example\.hello/);
    const a = await cliRun(['adapters', 'approve', 'org.example.hello', '--data-dir', data()], { LC_ALL: 'zh_CN.UTF-8' });
    assert.equal(a.code, 1, a.out);
    assert.match(a.err, /适配器批准文件 .*adapter-approvals\.json 不是 JSON/);
    assert.equal(readFileSync(file(), 'utf8'), '{ "adapters": ', 'the file is as the person left it');
    writeFileSync(file(), JSON.stringify({ adapters: { 'org.example.hello': { signer: 'approval-test-1', approved_at: 'x', colour: 'red' } } }));
    const schema = await cliRun(['adapters', 'approve', 'org.example.hello', '--data-dir', data()]);
    assert.equal(schema.code, 1, schema.out);
    assert.match(schema.err, /does not match its schema \(\/adapters\/org\.example\.hello\/colour is not an allowed property\)/);
  });
});

describe('where no sandbox can run, status says which adapters run unsandboxed (CLI-started agent, bwrap not on PATH)', () => {
  let s: Stack;
  const savedPath = process.env['PATH'];
  const data = () => join(s.dir, 'agent');

  before(async () => {
    const dir = tempDir('aios-unsandboxed-');
    cpSync(EXAMPLE, join(dir, 'adapters', 'org.example.hello'), { recursive: true });
    // The agent inherits this PATH: its probe finds no bwrap (node itself is started by its full path).
    process.env['PATH'] = '/nonexistent';
    try {
      s = await processStack({
        agent: {
          adapters: { dirs: [join(dir, 'adapters')], unsandboxed: 'allow', approved: { 'org.example.hello': {} } },
          trust: { keys: [join(ROOT, 'examples/hello-adapter/keys/EXAMPLE-ONLY.jwks')] },
        },
      });
    } finally {
      process.env['PATH'] = savedPath;
    }
  });
  after(async () => {
    await s?.stop();
  });

  test('status --json lists it under agent.adapters.unsandboxed; the text warns, in Chinese too', async () => {
    await until(async () => ((await s.client.device(ids.device_id))['functions'] as { id: string }[]).some((f) => f.id === 'hello.greet'), 20_000, 'hello.greet is offered');
    const st = await cliRun(['status', '--data-dir', data(), '--bridge', s.url, '--json']);
    assert.deepEqual((JSON.parse(st.out) as { agent: { adapters?: unknown } }).agent.adapters, { unsandboxed: ['org.example.hello'], pending: [] });
    assert.match((await cliRun(['status', '--data-dir', data(), '--bridge', s.url])).out, /warning: adapters running without a sandbox \(adapters\.unsandboxed: allow\), able to read what the agent can: org\.example\.hello/);
    assert.match((await cliRun(['status', '--data-dir', data(), '--bridge', s.url], { LC_ALL: 'zh_CN.UTF-8' })).out, /以下适配器在沙箱之外运行.*org\.example\.hello/);
  });
});
