/**
 * The agent's sign-in service (src/agent/sign-in.ts) against a real login bridge on port 0 (the OAuth
 * routes over SQLite, with a clock the test moves) and a real token file: waiting with a code and a QR
 * code that decodes to the approval address; approved → signed in, then signed out with the tokens
 * revoked at the bridge; an expired code; a bridge that is not there or offers no login; typed refusals.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import jsqr from 'jsqr';
import { PNG } from 'pngjs';
import { SignInService, signInMethods, type SignInView } from '../../src/agent/sign-in.js';
import { silentLogger } from '../../src/base/logger.js';
import { readLoginState, type LoginState } from '../../src/identity/login-state.js';
import { FileSecretStore } from '../../src/identity/secret-store.js';
import { readTokens } from '../../src/identity/token-manager.js';
import { RpcError } from '../../src/protocol/errors.js';
import { PageClient, startOAuthBridge, tempDir } from './helpers.js';

const jsQR = (jsqr as unknown as { default: typeof jsqr.default }).default;

function service(dir: string, url: string | undefined, calls: string[] = []) {
  return new SignInService(
    {
      dataDir: join(dir, 'data'),
      tokenFile: join(dir, 'data', 'tokens.json'),
      defaultBridgeUrl: url,
      clientVersion: '9.9.9',
      deviceName: 'Unit box',
      log: silentLogger(),
      onSignedIn: (s: LoginState) => void calls.push(`signed in ${s.user_id} ${s.workspace_id}`),
      onSigningOut: () => void calls.push('signing out'),
    },
    null,
  );
}

/** Resolves with the first change whose state is `state`. */
async function next(svc: SignInService, state: string): Promise<SignInView> {
  for (;;) {
    const [v] = (await once(svc, 'change')) as [SignInView];
    if (v.state === state) return v;
  }
}

describe('sign-in service', () => {
  it('shows a code and a QR code of the approval address; approved, it is signed in; signing out revokes at the bridge', async () => {
    const bridge = await startOAuthBridge();
    const tmp = tempDir();
    const calls: string[] = [];
    try {
      const svc = service(tmp.dir, `${bridge.url.replace(/^http/, 'ws')}/v1/device`, calls);
      assert.deepEqual(svc.status(), { state: 'not_signed_in', bridge_url: bridge.url }, 'the config bridge, as an http origin');
      const waiting = await svc.start(undefined);
      assert.equal(waiting.state, 'waiting');
      assert.equal(waiting.verification_uri_complete, `${bridge.url}/device?user_code=${encodeURIComponent(waiting.user_code!)}`);
      assert.ok(Date.parse(waiting.expires_at!) > Date.now() + 500_000, 'the expiry (10 minutes)');
      const png = PNG.sync.read(Buffer.from(waiting.qr!.replace(/^data:image\/png;base64,/, ''), 'base64'));
      assert.equal(jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data, waiting.verification_uri_complete);
      assert.equal(JSON.stringify(waiting).includes('aiosdc_'), false, 'the device code never leaves the service');

      const signedIn = next(svc, 'signed_in');
      assert.equal((await new PageClient(bridge.url).decide(waiting.user_code!, 'alice', 'approve', 'ws_b')).status, 200);
      const v = await signedIn;
      assert.deepEqual([v.user_id, v.workspace_id, v.bridge_url, v.device_name], ['usr_alice', 'ws_b', bridge.url, 'Unit box']);
      const state = await readLoginState(join(tmp.dir, 'data'));
      assert.equal(state?.device_id, v.device_id);
      const store = new FileSecretStore(join(tmp.dir, 'data', 'tokens.json'));
      assert.ok(await readTokens(store, v.device_id!), 'the tokens are in the configured token file');
      assert.deepEqual(calls, ['signed in usr_alice ws_b']);

      await assert.rejects(svc.start(bridge.url), (e: RpcError) => (e.data as { type: string }).type === 'signed_in', 'no second sign-in on top');

      const out = await svc.signOut();
      assert.equal(out.state, 'not_signed_in');
      assert.equal(out.revoked, true);
      assert.deepEqual(calls.slice(1), ['signing out'], 'the session is dropped before the revocation');
      assert.deepEqual(bridge.revoked, [v.device_id], 'the bridge revoked the device');
      assert.equal(await readTokens(store, v.device_id!), null, 'the tokens are deleted');
      assert.equal(await readLoginState(join(tmp.dir, 'data')), null);
    } finally {
      await bridge.close();
      tmp.remove();
    }
  });

  it('a code nobody approves expires; Cancel goes back; Deny is denied', async () => {
    const bridge = await startOAuthBridge();
    const tmp = tempDir();
    try {
      const svc = service(tmp.dir, bridge.url);
      await svc.start(undefined);
      const expired = next(svc, 'expired');
      bridge.advance(11 * 60_000);
      assert.equal((await expired).bridge_url, bridge.url);

      const again = await svc.start(bridge.url);
      assert.equal(again.state, 'waiting');
      assert.equal(svc.cancel().state, 'not_signed_in');

      const third = await svc.start(bridge.url);
      const denied = next(svc, 'denied');
      await new PageClient(bridge.url).decide(third.user_code!, 'alice', 'deny');
      await denied;
      assert.equal(svc.status().state, 'denied');
    } finally {
      await bridge.close();
      tmp.remove();
    }
  });

  it('a bridge that is not there, or offers no login, fails with a typed code; bad input is invalid params; methods need the local token', async () => {
    const tmp = tempDir();
    const plain = createServer((_req, res) => res.writeHead(404).end());
    plain.listen(0, '127.0.0.1');
    await once(plain, 'listening');
    try {
      const dead = createServer();
      dead.listen(0, '127.0.0.1');
      await once(dead, 'listening');
      const deadUrl = `http://127.0.0.1:${(dead.address() as AddressInfo).port}`;
      await new Promise((r) => dead.close(r));

      const svc = service(tmp.dir, undefined);
      const unreachable = await svc.start(deadUrl);
      assert.equal(unreachable.state, 'failed');
      assert.equal(unreachable.error?.code, 'bridge_unreachable');
      const notLogin = await svc.start(`http://127.0.0.1:${(plain.address() as AddressInfo).port}`);
      assert.equal(notLogin.error?.code, 'login_not_enabled');

      await assert.rejects(svc.start(undefined), (e: RpcError) => e.code === -32602 && (e.data as { type: string }).type === 'invalid_arguments', 'no URL and none in the config');
      await assert.rejects(svc.start('ftp://x'), (e: RpcError) => (e.data as { type: string }).type === 'invalid_arguments');
      const m = signInMethods(svc);
      await assert.rejects(m['control.signin.status']!({}, { authenticated: false }), { type: 'unauthorized' });
      await assert.rejects(m['control.signin.start']!({ bridge_url: 3 }, { authenticated: true }), (e: RpcError) => e.code === -32602);
      assert.equal(((await m['control.signout']!({}, { authenticated: true })) as SignInView).state, 'not_signed_in', 'signing out when signed out is harmless');
    } finally {
      plain.close();
      tmp.remove();
    }
  });
});
