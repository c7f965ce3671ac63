/**
 * Errors from deep code that reach a person through the real CLI (config files, the local socket, the
 * bridge's port, an unreachable bridge, the bridge's own refusals) are said in the user's language under
 * zh_CN.UTF-8 and in English otherwise, with the same exit codes; wire types and messages stay English.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { agentDoc, cli, cliRun, ids, processStack, procReport, tempDir } from '../helpers/stack.js';
import { EXIT_USAGE } from '../../src/cli/exit-codes.js';
import { slow } from '../helpers/wait.js';

const ZH = { LC_ALL: 'zh_CN.UTF-8', LANG: 'zh_CN.UTF-8' };
const EN = { LC_ALL: 'C.UTF-8' };

/** A loopback URL nobody listens on (a port taken and released). */
async function closedUrl(): Promise<string> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

test('a broken config file: the problems are said in Chinese (line and column of a YAML error, unknown key, wrong type), exit 64', async () => {
  const dir = tempDir('aios-cfg-i18n-');
  try {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'a: [b\n');
    const zh = await cliRun(['run', '-c', bad], ZH);
    assert.equal(zh.code, EXIT_USAGE, zh.err);
    assert.match(zh.err, /bad\.yaml 中的配置有误：\n {2}- 不是有效的 YAML 或 JSON：第 2 行第 1 列有误（/);
    const en = await cliRun(['run', '-c', bad], EN);
    assert.equal(en.code, EXIT_USAGE, en.err);
    assert.match(en.err, /config error in .*bad\.yaml:\n {2}- not valid YAML or JSON at line 2, column 1: /);

    const wrong = join(dir, 'wrong.yaml');
    writeFileSync(wrong, 'data_dir: 5\nnosuch: 1\nlog: { level: loud }\n');
    const zhWrong = await cliRun(['run', '-c', wrong], ZH);
    assert.equal(zhWrong.code, EXIT_USAGE, zhWrong.err);
    assert.match(zhWrong.err, /- 未知的键“nosuch”/);
    assert.match(zhWrong.err, /- "data_dir"：应当是 string 类型/);
    assert.match(zhWrong.err, /- "log\.level"：必须是以下之一："trace", "debug"/);
    assert.doesNotMatch(zhWrong.err, /unknown key|must be/);
    const enWrong = await cliRun(['run', '-c', wrong], EN);
    assert.match(enWrong.err, /- unknown key "nosuch"/);
    assert.match(enWrong.err, /- "data_dir" must be string/);

    // A problem found only once the functions are registered: the admin policy pre-allows a critical function.
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, JSON.stringify({ data_dir: join(dir, 'data'), local_endpoint: { host: '127.0.0.1', port: 0, socket: false }, policy: { 'files.delete': 'allow' } }));
    const grants = join(dir, 'grants.yaml');
    writeFileSync(grants, JSON.stringify({ data_dir: join(dir, 'data-g'), local_endpoint: { host: '127.0.0.1', port: 0, socket: false }, grants: { printerz: ['x'] } }));
    const zhGrants = await cliRun(['run', '-c', grants], ZH);
    assert.equal(zhGrants.code, EXIT_USAGE, zhGrants.err);
    assert.match(zhGrants.err, /- grants\.printerz：未知的授权类型（没有已加载的处理器声明它；已知类型：.*files/);
    const zhPolicy = await cliRun(['run', '-c', policy], ZH);
    assert.equal(zhPolicy.code, EXIT_USAGE, zhPolicy.err);
    assert.match(zhPolicy.err, /- policy\.files\.delete：关键（critical）功能不能设为 allow（请用 ask 或 deny）。/);

    // A bridge token without an identity: the agent cannot start until it signs in.
    const noId = join(dir, 'no-identity.yaml');
    writeFileSync(noId, JSON.stringify({ bridge: { url: 'ws://127.0.0.1:9/v1/device', token: 'x' }, data_dir: join(dir, 'data-noid'), local_endpoint: { host: '127.0.0.1', port: 0, socket: false } }));
    const zhNoId = await cliRun(['run', '-c', noId], ZH);
    assert.equal(zhNoId.code, 1, zhNoId.err);
    assert.match(zhNoId.err, /aios-device：在此设备用 `aios-device login` 登录之前，identity\.workspace_id、identity\.user_id 和 identity\.device_id 都是必填项/);

    const missing = await cliRun(['bridge', '-c', join(dir, 'none.yaml')], ZH);
    assert.equal(missing.code, EXIT_USAGE, missing.err);
    assert.match(missing.err, /- 无法读取该文件（ENOENT）/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no agent and no bridge: status says both in Chinese; invoke says the bridge is unreachable, exit 11 in both languages', async () => {
  const dir = tempDir('aios-noagent-i18n-');
  try {
    const url = await closedUrl();
    const args = ['status', '--data-dir', join(dir, 'data'), '--bridge', url, '--workspace', 'ws'];
    const zh = await cliRun(args, { ...ZH, AIOS_RUNTIME_TOKEN: 't' });
    assert.equal(zh.code, 0, zh.err);
    assert.match(zh.out, /代理：未运行/);
    assert.match(zh.out, new RegExp(`桥接服务：无法连接 ${url.replace(/\./g, '\\.')} 处的桥接服务（ECONNREFUSED）；它是否在运行，地址是否正确？`));
    const en = await cliRun(args, { ...EN, AIOS_RUNTIME_TOKEN: 't' });
    assert.match(en.out, new RegExp(`bridge: cannot reach the bridge at ${url.replace(/\./g, '\\.')} \\(ECONNREFUSED\\)`));

    const inv = ['invoke', 'device.info', '--bridge', url, '--workspace', 'ws', '--device', 'dev'];
    const zhInv = await cliRun(inv, { ...ZH, AIOS_RUNTIME_TOKEN: 't' });
    assert.equal(zhInv.code, 11, zhInv.err);
    assert.match(zhInv.err, /aios-device：无法连接 .* 处的桥接服务（ECONNREFUSED）/);
    const enInv = await cliRun(inv, { ...EN, AIOS_RUNTIME_TOKEN: 't' });
    assert.equal(enInv.code, 11, enInv.err);
    assert.match(enInv.err, /aios-device: cannot reach the bridge at /);

    // A file the user named that cannot be read, and a runtime profile that is not JSON: exit 1 as before.
    const noFile = await cliRun([...inv, '--args-file', join(dir, 'none.json')], { ...ZH, AIOS_RUNTIME_TOKEN: 't' });
    assert.equal(noFile.code, 1, noFile.err);
    assert.match(noFile.err, /aios-device：无法读取 .*none\.json（ENOENT）/);
    const prof = join(dir, 'profile.json');
    writeFileSync(prof, '{bad');
    const badProf = await cliRun(['functions', '--runtime', prof], ZH);
    assert.equal(badProf.code, 1, badProf.err);
    assert.match(badProf.err, /profile\.json 不是有效的 JSON（/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with a running stack: socket in use, bridge port in use, unknown function and device are said in the user language', { timeout: slow(180_000) }, async () => {
  const socketDir = tempDir('aios-sock-i18n-');
  const socket = join(socketDir, 'agent.sock');
  const s = await processStack({ agent: { local_endpoint: { host: '127.0.0.1', port: 0, socket } } });
  try {
    // A second agent of the same user on the same socket is refused, says why, and exits (it does not hang).
    const other = join(s.dir, 'other.json.cfg');
    mkdirSync(join(s.dir, 'other-data'), { recursive: true, mode: 0o700 });
    writeFileSync(other, JSON.stringify(agentDoc(s.dir, s.url, s.tokens, { data_dir: join(s.dir, 'other-data'), local_endpoint: { host: '127.0.0.1', port: 0, socket } })));
    for (const [env, want] of [
      [ZH, `aios-device：已有另一个代理在 ${socket} 上监听`],
      [EN, `aios-device: another agent is already listening on ${socket}`],
    ] as const) {
      const p = cli(['run', '-c', other], env);
      const code = await p.exited;
      assert.equal(code, 1, procReport('second agent', p));
      assert.ok(p.err.includes(want), procReport('second agent', p));
    }

    // The bridge's port is taken by the stack's bridge.
    const port = Number(new URL(s.url).port);
    const bcfg = join(s.dir, 'bridge2.json.cfg');
    writeFileSync(bcfg, JSON.stringify({ listen: { host: '127.0.0.1', port }, data_dir: join(s.dir, 'bridge2'), runtime_tokens: { rt_other_token: { workspace_id: ids.workspace_id } } }));
    const zhPort = await cliRun(['bridge', '-c', bcfg], ZH);
    assert.equal(zhPort.code, 1, zhPort.err);
    assert.match(zhPort.err, new RegExp(`aios-device：127\\.0\\.0\\.1:${port} 已被占用；请换一个 listen\\.port`));
    const enPort = await cliRun(['bridge', '-c', bcfg], EN);
    assert.match(enPort.err, new RegExp(`127\\.0\\.0\\.1:${port} is already in use; choose another listen\\.port`));

    const rt = { AIOS_RUNTIME_TOKEN: s.tokens.runtime };
    const base = ['--bridge', s.url, '--workspace', ids.workspace_id];
    // An unknown function id: the call fails with the wire type named in the user's language and what it
    // means from the core catalogue (English: the wire's message as it came).
    const zhFn = await cliRun(['invoke', 'no_such.fn', ...base, '--device', ids.device_id], { ...ZH, ...rt });
    assert.equal(zhFn.code, 8, zhFn.err); // a contract error the device reports (docs/cli.md)
    assert.match(zhFn.out, /未知功能（unknown_function）：这台设备没有提供这个功能：它没有安装，或者已被关闭。/);
    const enFn = await cliRun(['invoke', 'no_such.fn', ...base, '--device', ids.device_id], { ...EN, ...rt });
    assert.match(enFn.out, /unknown_function: No enabled function is registered as no_such\.fn\./);
    // An unknown device: the bridge's 404 names its type in the user's language.
    const zhDev = await cliRun(['functions', ...base, '--device', 'dev_nobody'], { ...ZH, ...rt });
    assert.equal(zhDev.code, 1, zhDev.err);
    assert.match(zhDev.err, /aios-device：未找到（not_found）：要找的对象不存在，或者不在这个工作空间里。/);
    // The running agent's bridge connection in the user's words.
    const zhStatus = await cliRun(['status', ...base, '--data-dir', join(s.dir, 'agent')], { ...ZH, ...rt });
    assert.equal(zhStatus.code, 0, zhStatus.err);
    assert.match(zhStatus.out, /代理与桥接服务的连接：已连接/);
    // A runtime token the bridge does not accept: its error type named in the user's language.
    const zhBadToken = await cliRun(['status', ...base, '--data-dir', join(s.dir, 'agent')], { ...ZH, AIOS_RUNTIME_TOKEN: 'rt_wrong_token' });
    assert.equal(zhBadToken.code, 0, zhBadToken.err);
    assert.match(zhBadToken.out, /桥接服务：未登录或令牌不被接受（unauthorized）：/);
  } finally {
    await s.stop();
    rmSync(socketDir, { recursive: true, force: true });
  }
});

test("the demo's agent cannot start (an open data folder it did not make): the reason is said in Chinese", async () => {
  const dir = tempDir('aios-demo-i18n-');
  try {
    const demo = join(dir, 'demo');
    mkdirSync(join(demo, 'agent-data'), { recursive: true, mode: 0o755 });
    chmodSync(join(demo, 'agent-data'), 0o755);
    const port = Number(new URL(await closedUrl()).port);
    const r = await cliRun(['demo', '--dir', demo, '--port', String(port)], ZH);
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /演示的代理无法启动，演示已停止：数据文件夹 .*agent-data 其他用户可以读取（权限 0755），而且不是 aios-device 创建的/);
    assert.doesNotMatch(r.err, /can be read by other users/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('logout when not signed in, login with a bad or silent bridge: said in the user language, exit codes as before', async () => {
  const dir = tempDir('aios-logout-i18n-');
  try {
    const args = ['logout', '--data-dir', join(dir, 'data'), '--token-file', join(dir, 'tokens.json')];
    const zh = await cliRun(args, ZH);
    assert.equal(zh.code, 0, zh.err);
    assert.equal(zh.out, '此设备尚未登录。\n');
    const en = await cliRun(args, EN);
    assert.equal(en.code, 0, en.err);
    assert.equal(en.out, 'This device is not signed in.\n');
    // A bridge address that is not a URL, and a bridge that does not answer.
    const bad = ['login', '--bridge', 'notaurl', '--data-dir', join(dir, 'data'), '--token-file', join(dir, 'tokens.json'), '--no-browser'];
    const zhBad = await cliRun(bad, ZH);
    assert.equal(zhBad.code, 1, zhBad.err);
    assert.match(zhBad.err, /不是桥接服务的 URL：notaurl（例如/);
    const url = await closedUrl();
    const down = ['login', '--bridge', url, '--data-dir', join(dir, 'data'), '--token-file', join(dir, 'tokens.json'), '--no-browser'];
    const zhDown = await cliRun(down, ZH);
    assert.equal(zhDown.code, 1, zhDown.err);
    assert.equal(zhDown.err, `无法连接 ${url} 处的桥接服务（ECONNREFUSED）。\n`);
    const enDown = await cliRun(down, EN);
    assert.equal(enDown.err, `The bridge at ${url} could not be reached (ECONNREFUSED).\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('invoke with no device named (not in the profile, no --device): what to do, in the user\'s language, exit 64', async () => {
  const url = await closedUrl();
  const args = ['invoke', 'diagnostics.echo', '--bridge', url, '--token', 'rt_x', '--workspace', ids.workspace_id];
  const noDevice = { AIOS_DEVICE: '', AIOS_RUNTIME_TOKEN: '' };
  const zh = await cliRun(args, { ...ZH, ...noDevice });
  assert.equal(zh.code, EXIT_USAGE, zh.err);
  assert.match(zh.err, /没有设备：运行时配置文件中没有 device_id；请传入 --device ID/);
  const en = await cliRun(args, { ...EN, ...noDevice });
  assert.equal(en.code, EXIT_USAGE, en.err);
  assert.match(en.err, /no device: the runtime profile has no device_id; pass --device ID/);
});
