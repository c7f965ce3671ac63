/**
 * The login over real HTTP: a node:http server on port 0 mounting `OAuthService.handleHttp`, the
 * agent's login client polling it, the approval page driven with forms and cookies. Secrets go to
 * a 0600 token file here (the keychain and the browser have their own tests).
 */
import assert from 'node:assert/strict';
import { statSync, writeFileSync, chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { login, LoginError, logout } from '../../src/identity/login-client.js';
import { readLoginState } from '../../src/identity/login-state.js';
import { OAuthClient, type TokenGrant } from '../../src/identity/oauth-client.js';
import { FileSecretStore } from '../../src/identity/secret-store.js';
import { readTokens, TokenManager } from '../../src/identity/token-manager.js';
import { WireError } from '../../src/protocol/errors.js';
import { PageClient, startOAuthBridge, tempDir, type OAuthBridge } from './helpers.js';

/** Captures what the login client prints and resolves the user code as soon as it is shown. */
function terminal(): { out: PassThrough; text: () => string; code: Promise<string> } {
  const out = new PassThrough();
  let text = '';
  const code = new Promise<string>((resolve) => {
    out.on('data', (d: Buffer) => {
      text += d.toString();
      const m = /enter the code\s+([A-Z]{4}-[A-Z]{4})/.exec(text);
      if (m) resolve(m[1]!);
    });
  });
  return { out, text: () => text, code };
}

describe('device login over HTTP', () => {
  let bridge: OAuthBridge;
  const tmp = tempDir();
  before(async () => {
    bridge = await startOAuthBridge({ access_token_ttl_s: 600 });
  });
  after(async () => {
    await bridge.close();
    tmp.remove();
  });

  async function signIn(dataDir: string, store: FileSecretStore, user: string, workspace: string, deviceName = 'QA box') {
    const term = terminal();
    const done = login({ bridgeUrl: bridge.url, dataDir, store, clientVersion: '0.1.0', deviceName, out: term.out, openBrowser: false });
    const code = await term.code;
    const page = await new PageClient(bridge.url).decide(code, user, 'approve', workspace);
    assert.match(page.body, /Device approved/);
    return { result: await done, output: term.text() };
  }

  it('signs a device in: code and QR printed, tokens in a 0600 file, identity bound, no token in login.json', async () => {
    const dataDir = join(tmp.dir, 'one');
    const store = new FileSecretStore(join(tmp.dir, 'one-secrets.json'));
    const { result, output } = await signIn(dataDir, store, 'alice', 'ws_a');
    assert.match(output, new RegExp(`${bridge.url}/device`));
    assert.match(output, /▄|█/, 'a QR code is printed');
    assert.equal(result.workspace_id, 'ws_a');
    assert.equal(result.user_id, 'usr_alice');
    assert.equal(statSync(store.path).mode & 0o777, 0o600);
    const tokens = await readTokens(store, result.device_id);
    assert.ok(tokens);
    assert.deepEqual(await bridge.service.authenticateDevice(tokens.access_token), { workspace_id: 'ws_a', user_id: 'usr_alice', device_id: result.device_id });
    const loginJson = readFileSync(join(dataDir, 'login.json'), 'utf8');
    assert.ok(!loginJson.includes(tokens.access_token) && !loginJson.includes(tokens.refresh_token));
    assert.ok(!output.includes(tokens.access_token) && !output.includes(tokens.refresh_token), 'no token is printed');
    assert.equal((await bridge.service.devicePublicJwk({ workspace_id: 'ws_a', user_id: 'usr_alice', device_id: result.device_id }))?.kty, 'EC', 'the device key is pinned at the bridge');
  });

  it('ends with a clear message when the request is denied', async () => {
    const dataDir = join(tmp.dir, 'denied');
    const store = new FileSecretStore(join(tmp.dir, 'denied-secrets.json'));
    const term = terminal();
    const done = login({ bridgeUrl: bridge.url, dataDir, store, clientVersion: '0.1.0', out: term.out, openBrowser: false, qr: false });
    const page = await new PageClient(bridge.url).decide(await term.code, 'alice', 'deny');
    assert.match(page.body, /denied/);
    await assert.rejects(done, (e) => e instanceof LoginError && e.code === 'access_denied' && /denied on the approval page/.test(e.message));
    assert.equal(await readLoginState(dataDir), null, 'nothing was stored');
  });

  it('ends with a clear message when the code expires', async () => {
    const dataDir = join(tmp.dir, 'expired');
    const store = new FileSecretStore(join(tmp.dir, 'expired-secrets.json'));
    const term = terminal();
    const done = login({ bridgeUrl: bridge.url, dataDir, store, clientVersion: '0.1.0', out: term.out, openBrowser: false, qr: false });
    await term.code;
    bridge.advance(601_000);
    await assert.rejects(done, (e) => e instanceof LoginError && e.code === 'expired_token' && /expired before it was approved/.test(e.message));
  });

  it('refreshes once for many concurrent callers, and rotates the stored refresh token', async () => {
    const dataDir = join(tmp.dir, 'refresh');
    const store = new FileSecretStore(join(tmp.dir, 'refresh-secrets.json'));
    const { result } = await signIn(dataDir, store, 'bob', 'ws_b');
    const before = (await readTokens(store, result.device_id))!;
    const client = new OAuthClient(bridge.url);
    let refreshes = 0;
    let offset = 0;
    const tm = new TokenManager({
      store,
      deviceId: result.device_id,
      clock: () => Date.now() + offset,
      refresh: (rt): Promise<TokenGrant> => {
        refreshes++;
        return client.refresh(rt);
      },
    });
    assert.equal(await tm.getAccessToken(), before.access_token, 'a fresh token is used as is');
    const tokens = await Promise.all([tm.onUnauthorized(before.access_token), tm.onUnauthorized(before.access_token), tm.getAccessToken()]);
    assert.equal(refreshes, 1, 'concurrent callers share one refresh');
    assert.notEqual(tokens[0], before.access_token);
    const after = (await readTokens(store, result.device_id))!;
    assert.notEqual(after.refresh_token, before.refresh_token, 'the refresh token rotated');
    assert.ok(await bridge.service.authenticateDevice(await tm.getAccessToken()));
    offset += 560_000; // within the last minute of the token's 10-minute life, on the device's clock
    const renewed = await tm.getAccessToken();
    assert.equal(refreshes, 2, 'an expiring token is refreshed before use');
    assert.ok(await bridge.service.authenticateDevice(renewed));
  });

  it('logout revokes at the bridge, tells the bridge to drop the session, and deletes local tokens; the next refresh is unauthorized', async () => {
    const dataDir = join(tmp.dir, 'logout');
    const store = new FileSecretStore(join(tmp.dir, 'logout-secrets.json'));
    const { result } = await signIn(dataDir, store, 'alice', 'ws_b');
    const tokens = (await readTokens(store, result.device_id))!;
    const out = new PassThrough();
    const r = await logout({ dataDir, store, out });
    assert.deepEqual(r, { revoked: true, wasSignedIn: true });
    assert.ok(bridge.revoked.includes(result.device_id));
    assert.equal(await bridge.service.authenticateDevice(tokens.access_token), null);
    assert.equal(await readTokens(store, result.device_id), null);
    await assert.rejects(new OAuthClient(bridge.url).refresh(tokens.refresh_token), /revoked/);
    const tm = new TokenManager({ store, deviceId: result.device_id, refresh: (rt) => new OAuthClient(bridge.url).refresh(rt) });
    await assert.rejects(tm.getAccessToken(), (e) => e instanceof WireError && e.type === 'unauthorized' && /aios-device login/.test(e.message));
  });

  it('a revoked device cannot refresh and its stored tokens are dropped', async () => {
    const dataDir = join(tmp.dir, 'revoked');
    const store = new FileSecretStore(join(tmp.dir, 'revoked-secrets.json'));
    const { result } = await signIn(dataDir, store, 'alice', 'ws_a');
    const tm = new TokenManager({ store, deviceId: result.device_id, refresh: (rt) => new OAuthClient(bridge.url).refresh(rt) });
    const token = await tm.getAccessToken();
    assert.equal(await bridge.service.revokeDevice(result.device_id), true);
    assert.equal(await bridge.service.authenticateDevice(token), null);
    await assert.rejects(tm.onUnauthorized(token), (e) => e instanceof WireError && e.type === 'unauthorized' && /revoked or expired/.test(e.message));
    assert.equal(await readTokens(store, result.device_id), null);
  });

  it('lists one user’s devices separately, each with name, platform and version', async () => {
    const a = await signIn(join(tmp.dir, 'multi-1'), new FileSecretStore(join(tmp.dir, 'multi-1.json')), 'bob', 'ws_b', 'Laptop');
    const b = await signIn(join(tmp.dir, 'multi-2'), new FileSecretStore(join(tmp.dir, 'multi-2.json')), 'bob', 'ws_b', 'Printer PC');
    assert.notEqual(a.result.device_id, b.result.device_id);
    const listed = (await bridge.service.listDevices('ws_b')).filter((d) => d.user_id === 'usr_bob' && !d.revoked);
    const mine = listed.filter((d) => [a.result.device_id, b.result.device_id].includes(d.device_id));
    assert.deepEqual(mine.map((d) => d.name).sort(), ['Laptop', 'Printer PC']);
    for (const d of mine) {
      assert.match(d.platform, /\S+ \S+/);
      assert.equal(d.client_version, '0.1.0');
    }
    assert.ok(!(await bridge.service.listDevices('ws_a')).some((d) => d.device_id === a.result.device_id), 'other workspaces do not see them');
  });
});

describe('approval page protections', () => {
  let bridge: OAuthBridge;
  before(async () => {
    bridge = await startOAuthBridge({ code_attempts: { max: 3, window_s: 600 } });
  });
  after(() => bridge.close());

  it('refuses forms without the page’s CSRF token', async () => {
    const page = new PageClient(bridge.url);
    await page.get('/device');
    const r = await page.post('/device/signin', { csrf: 'forged', username: 'alice', password: 'alice-pw', user_code: '' });
    assert.equal(r.status, 403);
  });

  it('sets an HttpOnly, SameSite=Strict session cookie and forbids framing', async () => {
    const res = await fetch(`${bridge.url}/device`);
    assert.match(res.headers.get('set-cookie') ?? '', /HttpOnly; SameSite=Strict/);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  });

  it('rejects wrong passwords', async () => {
    const page = new PageClient(bridge.url);
    const start = await page.get('/device');
    const r = await page.post('/device/signin', { csrf: PageClient.csrf(start.body), username: 'alice', password: 'nope', user_code: '' });
    assert.equal(r.status, 401);
    assert.match(r.body, /Wrong user name or password/);
  });

  it('stops user-code guessing after the allowed attempts', async () => {
    const page = new PageClient(bridge.url);
    const start = await page.get('/device');
    await page.post('/device/signin', { csrf: PageClient.csrf(start.body), username: 'alice', password: 'alice-pw', user_code: '' });
    for (let i = 0; i < 3; i++) assert.equal((await page.get('/device?user_code=BCDF-GHJK')).status, 404);
    const blocked = await page.get('/device?user_code=BCDF-GHJL');
    assert.equal(blocked.status, 429);
    assert.match(blocked.body, /Too many wrong codes/);
  });

  it('answers OAuth errors in the RFC shape', async () => {
    const res = await fetch(`${bridge.url}/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=password&client_id=aios-device',
    });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(((await res.json()) as { error: string }).error, 'unsupported_grant_type');
  });
});

describe('token file', () => {
  it('refuses a token file other users can read', async () => {
    const tmp = tempDir();
    try {
      const path = join(tmp.dir, 'tokens.json');
      writeFileSync(path, JSON.stringify({ version: 1, secrets: { a: 'b' } }));
      chmodSync(path, 0o644);
      await assert.rejects(new FileSecretStore(path).get('a'), /can be read by other users/);
      chmodSync(path, 0o600);
      assert.equal(await new FileSecretStore(path).get('a'), 'b');
    } finally {
      tmp.remove();
    }
  });
});

describe('hash-password command', () => {
  it('prints a hash of the password read from stdin that the bridge accepts', async () => {
    const { spawnSync } = await import('node:child_process');
    const { verifyPassword } = await import('../../src/base/password.js');
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/login/fixtures/login-cli.ts', 'hash-password'], { input: 's3cret pass\n', encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const hash = r.stdout.trim();
    assert.ok(!hash.includes('s3cret'));
    assert.equal(await verifyPassword('s3cret pass', hash), true);
    assert.equal(await verifyPassword('other', hash), false);
  });
});
