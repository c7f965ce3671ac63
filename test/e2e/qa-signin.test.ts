/**
 * Sign-in as the QA trial met it (issue 14), with the bridge, `login`, `logout` and the agent as CLI
 * processes and the approval page driven over HTTP: a revoked agent says on its console and in `status`
 * why it stopped and what to do, and picks up a new login without a restart; `/device` on a bridge
 * without users is a page that says sign-in is off; the demo prints a user who can approve a login.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, cliRun, processStack, tempDir, until, type Proc } from '../helpers/stack.js';
import { PageClient, testUsers } from '../login/helpers.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { freePort } from '../helpers/net.js';

/** Runs `login` with a token file, approves its code on the bridge's page as `user`, and waits for it to end. */
async function loginApproved(bridge: string, dataDir: string, user: string, password: string, workspace: string): Promise<Proc> {
  const run = cli(['login', '--bridge', bridge, '--data-dir', dataDir, '--token-file', join(dataDir, 'tokens.json'), '--no-browser', '--no-qr', '--device-name', 'QA box']);
  const code = (await until(() => /enter the code\s+([A-Z]{4}-[A-Z]{4})/.exec(run.out)?.[1], 30_000, 'the login code'))!;
  const page = new PageClient(bridge);
  const start = await page.get(`/device?user_code=${encodeURIComponent(code)}`);
  let form = start;
  if (start.body.includes('id="signin"')) form = await page.post('/device/signin', { csrf: PageClient.csrf(start.body), username: user, password, user_code: code });
  const done = await page.post('/device/decision', { csrf: PageClient.csrf(form.body), user_code: code, action: 'approve', workspace_id: workspace });
  assert.equal(done.status, 200, done.body.slice(0, 300));
  assert.equal(await run.exited, 0, run.err + run.out);
  return run;
}


describe('a signed-in agent that is revoked, then signed in again', () => {
  let dir: string;
  let bridge: Proc;
  let agent: Proc | undefined;
  let url: string;
  const data = () => join(dir, 'device');
  before(async () => {
    dir = tempDir('aios-qa-signin-');
    const cfg = join(dir, 'bridge.json');
    writeFileSync(cfg, JSON.stringify({ listen: { host: '127.0.0.1', port: 0 }, data_dir: join(dir, 'bridge'), users: await testUsers(), runtime_tokens: { rt_qa: { workspace_id: 'ws_b' } }, device_poll_interval_s: 0 }));
    bridge = cli(['bridge', '--config', cfg]);
    const file = join(dir, 'bridge', 'bridge.json');
    await until(() => existsSync(file), 30_000, 'bridge.json');
    url = (JSON.parse(readFileSync(file, 'utf8')) as { url: string }).url;
  });
  after(async () => {
    await agent?.kill('SIGKILL');
    await bridge.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('a login denied on the page ends with the sentence in the user\'s language (exit 1)', async () => {
    const dataDir = join(dir, 'denied');
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const run = cli(['login', '--bridge', url, '--data-dir', dataDir, '--token-file', join(dataDir, 'tokens.json'), '--no-browser', '--no-qr'], { LC_ALL: 'zh_CN.UTF-8', LANG: 'zh_CN.UTF-8' });
    const code = (await until(() => /([A-Z]{4}-[A-Z]{4})/.exec(run.out)?.[1], 30_000, 'the login code'))!;
    const page = new PageClient(url);
    const start = await page.get(`/device?user_code=${encodeURIComponent(code)}`);
    let form = start;
    if (start.body.includes('id="signin"')) form = await page.post('/device/signin', { csrf: PageClient.csrf(start.body), username: 'alice', password: 'alice-pw', user_code: code });
    const done = await page.post('/device/decision', { csrf: PageClient.csrf(form.body), user_code: code, action: 'deny' });
    assert.equal(done.status, 200, done.body.slice(0, 300));
    assert.equal(await run.exited, 1, run.err + run.out);
    assert.match(run.err, /登录请求在批准页面上被拒绝；未保存任何登录/);
    assert.doesNotMatch(run.err, /denied on the approval page/);
  });

  test('revoked: the console and status say why and what to do; a new login is picked up without a restart', async () => {
    // Private, as the agent requires of a data folder it did not create.
    mkdirSync(data(), { recursive: true, mode: 0o700 });
    await loginApproved(url, data(), 'alice', 'alice-pw', 'ws_b');
    const acfg = join(dir, 'agent.json');
    writeFileSync(acfg, JSON.stringify({ data_dir: data(), local_endpoint: { host: '127.0.0.1', port: 0, socket: false } }));
    agent = cli(['run', '--config', acfg]);
    const state = JSON.parse(readFileSync(join(data(), 'login.json'), 'utf8')) as { device_id: string };
    const rt = new RuntimeClient({ bridge_url: url, token: 'rt_qa', workspace_id: 'ws_b', device_id: state.device_id });
    // The bridge knows the device once it first connects: until then the lookup is a 404.
    const online = (want: boolean) =>
      until(async () => (await rt.device(state.device_id).catch(() => ({ online: false })))['online'] === want, 30_000, want ? 'online' : 'offline').catch((e: Error) => {
        throw new Error(`${e.message}; the agent said:\n${agent?.err ?? ''}`);
      });
    await online(true);
    assert.equal((await rt.call('device.info', {})).record.outcome?.state, 'completed');

    // Revoked (logout revokes at the bridge, which closes the session; the reconnect is refused).
    const out = await cliRun(['logout', '--data-dir', data()]);
    assert.equal(out.code, 0, out.err);
    await until(() => agent!.err.includes('agent stopped connecting to the bridge (unauthorized)'), 30_000, 'the console says it stopped');
    assert.match(agent.err, /what to do: Sign in again with `aios-device login --bridge URL`.*picks up the new sign-in without a restart/);
    const st = await cliRun(['status', '--data-dir', data(), '--json', '--bridge', url, '--token', 'rt_qa', '--workspace', 'ws_b']);
    const s = JSON.parse(st.out) as { agent: { running: boolean; stopped?: { type: string; action: string } } };
    assert.equal(s.agent.running, true, st.out + st.err);
    assert.equal(s.agent.stopped?.type, 'unauthorized', st.out);
    assert.match(s.agent.stopped?.action ?? '', /aios-device login/);
    const text = await cliRun(['status', '--data-dir', data(), '--bridge', url, '--token', 'rt_qa', '--workspace', 'ws_b']);
    assert.match(text.out, /agent stopped connecting to the bridge \(unauthorized\)[\s\S]*what to do:/);

    // Signed in again while the agent runs: it reconnects by itself, and calls work.
    await loginApproved(url, data(), 'alice', 'alice-pw', 'ws_b');
    await until(() => agent!.err.includes('new sign-in picked up'), 30_000, 'the console says the sign-in was picked up');
    await online(true);
    assert.equal((await rt.call('device.info', {})).record.outcome?.state, 'completed');
    assert.equal(agent.child.exitCode, null, 'the same agent process, never restarted');
    const after = JSON.parse((await cliRun(['status', '--data-dir', data(), '--json', '--bridge', url, '--token', 'rt_qa', '--workspace', 'ws_b'])).out) as { agent: { stopped?: unknown; bridge?: string } };
    assert.equal(after.agent.stopped, undefined);
    assert.equal(after.agent.bridge, 'connected');
  });
});

test('/device on a bridge without users: a page that says sign-in is off and what the administrator sets', async () => {
  const s = await processStack();
  try {
    const html = await fetch(`${s.url}/device`, { headers: { accept: 'text/html,application/xhtml+xml' } });
    assert.equal(html.status, 404);
    assert.match(html.headers.get('content-type') ?? '', /^text\/html/);
    const body = await html.text();
    assert.match(body, /Device sign-in is not enabled on this bridge/);
    assert.match(body, /<code>users<\/code>/);
    assert.match(body, /aios-device hash-password/);
    const json = await fetch(`${s.url}/device`);
    assert.equal(json.status, 404);
    assert.match(((await json.json()) as { error: { message: string } }).error.message, /Device sign-in is not enabled on this bridge\. The administrator enables it by adding `users`/);
  } finally {
    await s.stop();
  }
});

test('the demo prints a user and password that approve a real device login', async () => {
  const dir = tempDir();
  const port = await freePort();
  const demo = cli(['demo', '--dir', join(dir, 'demo'), '--port', String(port)]);
  try {
    await until(() => demo.out.includes('Ctrl-C stops both'), 60_000, 'demo banner');
    const m = /user "(\w+)", password (\S+)/.exec(demo.out);
    assert.ok(m, demo.out);
    assert.match(demo.out, /login --bridge http:\/\/127\.0\.0\.1:\d+ --data-dir/);
    const tryDir = join(dir, 'try');
    mkdirSync(tryDir);
    await loginApproved(`http://127.0.0.1:${port}`, tryDir, m[1]!, m[2]!, 'ws_demo');
    const state = JSON.parse(readFileSync(join(tryDir, 'login.json'), 'utf8')) as { workspace_id: string; user_id: string };
    assert.equal(state.workspace_id, 'ws_demo');
    assert.equal(state.user_id, 'usr_demo');
  } finally {
    demo.child.kill('SIGINT');
    assert.equal(await demo.exited, 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
