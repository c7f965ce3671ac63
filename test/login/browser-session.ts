/**
 * Runs inside scripts/with-keyring.sh (see browser.test.ts). The `login` command runs as its own
 * process and prints the code; Chromium (playwright-core) signs in on the bridge's approval page,
 * compares the code and device name, and approves or denies; tokens land in gnome-keyring.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type BrowserContext } from 'playwright-core';
import { OAuthClient } from '../../src/identity/oauth-client.js';
import { KeychainSecretStore } from '../../src/identity/secret-store.js';
import { readTokens, TokenManager } from '../../src/identity/token-manager.js';
import { WireError } from '../../src/protocol/errors.js';
import { startOAuthBridge, tempDir, type OAuthBridge } from './helpers.js';
import { CHROMIUM_ARGS, reachDecision, startLogin } from './login-process.js';

describe('device login in Chromium', () => {
  let bridge: OAuthBridge;
  let context: BrowserContext;
  const tmp = tempDir('aios-browser-');
  const shots = join(tmp.dir, 'shots');
  const store = new KeychainSecretStore();
  const children: ChildProcess[] = [];

  before(async () => {
    assert.equal(process.env['AIOS_KEYRING_SANDBOX'], '1', 'run through browser.test.ts, never against a real keychain');
    assert.ok(process.env['HOME']?.startsWith(tmpdir()));
    mkdirSync(shots);
    bridge = await startOAuthBridge();
    context = await chromium.launchPersistentContext(join(tmp.dir, 'profile'), { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill();
    await context?.close();
    await bridge?.close();
    if (process.env['AIOS_KEEP_SHOTS']) process.stderr.write(`screenshots in ${shots}\n`);
    else tmp.remove();
  });

  async function loginInBrowser(dataDir: string, deviceName: string, user: string, workspace: string): Promise<string> {
    const run = startLogin(bridge.url, dataDir, deviceName);
    children.push(run.child);
    const page = await context.newPage();
    await reachDecision(page, run, user, deviceName);
    await page.screenshot({ path: join(shots, `${deviceName}-approve.png`) });
    await page.selectOption('#workspace_id', workspace);
    await page.click('#approve');
    assert.match((await page.textContent('#result')) ?? '', new RegExp(`${deviceName} is approved for workspace ${workspace}; it connects when its agent runs`));
    await page.screenshot({ path: join(shots, `${deviceName}-done.png`) });
    await page.close();
    assert.equal(await run.exit, 0, run.stderr());
    assert.match(run.stdout(), /Signed in: device/);
    assert.match(run.stdout(), /stored in the OS keychain/);
    return (JSON.parse(readFileSync(join(dataDir, 'login.json'), 'utf8')) as { device_id: string }).device_id;
  }

  let first: string;
  let second: string;

  it('approves in the browser; the CLI stores the tokens in the keychain', async () => {
    first = await loginInBrowser(join(tmp.dir, 'dev1'), 'Front-desk PC', 'alice', 'ws_b');
    const tokens = await readTokens(store, first);
    assert.ok(tokens, 'tokens are in the keychain');
    assert.deepEqual(await bridge.service.authenticateDevice(tokens.access_token), { workspace_id: 'ws_b', user_id: 'usr_alice', device_id: first });
    assert.ok(!readFileSync(join(tmp.dir, 'dev1', 'login.json'), 'utf8').includes(tokens.refresh_token));
  });

  it('a denial in the browser ends the CLI with a clear message', async () => {
    const run = startLogin(bridge.url, join(tmp.dir, 'denied'), 'Kiosk');
    children.push(run.child);
    const page = await context.newPage();
    await reachDecision(page, run, 'alice', 'Kiosk');
    await page.click('#deny');
    assert.match((await page.textContent('#result')) ?? '', /denied/);
    await page.close();
    assert.equal(await run.exit, 1);
    assert.match(run.stderr(), /The sign-in request was denied on the approval page; no sign-in was stored \(the device keeps its id and key for the next login\)\./);
  });

  it('an expired code ends the CLI with a clear message, and the page refuses the code', async () => {
    const run = startLogin(bridge.url, join(tmp.dir, 'late'), 'Late box');
    children.push(run.child);
    const code = await run.code;
    bridge.advance(601_000);
    assert.equal(await run.exit, 1);
    assert.match(run.stderr(), /The code expired before it was approved; run `aios-device login` again/);
    const page = await context.newPage();
    await page.goto(`${bridge.url}/device?user_code=${code}`);
    assert.match((await page.textContent('#error')) ?? '', /unknown, expired or already used/);
    await page.close();
  });

  it('a second device of the same user works independently; revoking the first on the page leaves the second', async () => {
    second = await loginInBrowser(join(tmp.dir, 'dev2'), 'Lab laptop', 'alice', 'ws_b');
    assert.notEqual(second, first);
    const t1 = (await readTokens(store, first))!;
    const t2 = (await readTokens(store, second))!;
    const mine = (await bridge.service.listDevices('ws_b')).filter((d) => !d.revoked).map((d) => d.name).sort();
    assert.deepEqual(mine, ['Front-desk PC', 'Lab laptop']);

    const page = await context.newPage();
    await page.goto(`${bridge.url}/device`);
    await page.getByRole('button', { name: 'Revoke Front-desk PC' }).click();
    assert.match((await page.textContent('[role=status]')) ?? '', /Front-desk PC was revoked/);
    await page.screenshot({ path: join(shots, 'revoked.png') });
    await page.close();

    assert.deepEqual(bridge.revoked, [first], 'the bridge was told to drop the first device’s session');
    assert.equal(await bridge.service.authenticateDevice(t1.access_token), null, 'its next connect is refused');
    assert.ok(await bridge.service.authenticateDevice(t2.access_token), 'the second device is untouched');
    const tm = new TokenManager({ store, deviceId: first, refresh: (rt) => new OAuthClient(bridge.url).refresh(rt) });
    await assert.rejects(tm.onUnauthorized(t1.access_token), (e) => e instanceof WireError && e.type === 'unauthorized');
  });

  it('logout revokes the second device and deletes its tokens from the keychain', async () => {
    const t2 = (await readTokens(store, second))!;
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/login/fixtures/login-cli.ts', 'logout', '--data-dir', join(tmp.dir, 'dev2')], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    assert.equal(await new Promise((r) => child.on('exit', r)), 0);
    assert.match(out, /Signed out: the bridge revoked/);
    assert.equal(await readTokens(store, second), null);
    assert.equal(await bridge.service.authenticateDevice(t2.access_token), null);
  });
});
