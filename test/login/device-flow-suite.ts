/**
 * RFC 8628 rules of the bridge over a login store (src/bridge/oauth/login-store.ts) with a clock the test moves:
 * polling, cumulative slow_down, approval, denial, expiry, refresh rotation with reuse detection, revocation, key
 * pinning, and that only hashes of tokens are stored. One behaviour suite, run on SQLite
 * (device-flow.test.ts) and on PostgreSQL (device-flow-postgres.test.ts).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { JWK } from 'jose';
import { ApprovalError, DeviceFlow, OAuthError, type AuthorizationRequest } from '../../src/bridge/oauth/device-flow.js';
import type { LoginStore } from '../../src/bridge/oauth/login-store.js';
import { normaliseUserCode } from '../../src/bridge/oauth/tokens.js';
import { testUsers } from './helpers.js';

function publicJwk(): JWK {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return publicKey.export({ format: 'jwk' }) as JWK;
}

function request(deviceId: string, jwk: JWK = publicJwk()): AuthorizationRequest {
  return { client_id: 'aios-device', device_id: deviceId, device_name: 'QA box', platform: 'linux x64', client_version: '0.1.0', public_jwk: jwk };
}

function oauthError(code: string): (e: unknown) => boolean {
  return (e) => e instanceof OAuthError && e.error === code;
}

/** A login store on one engine, the text of its token tables (to look for secrets), and its disposal. */
export interface SuiteStore {
  store: LoginStore;
  dump(): Promise<string>;
  close(): Promise<void>;
}

/** The device flow's rules over a login store of `engine` (one behaviour suite for SQLite and PostgreSQL). */
export function deviceFlowSuite(engine: string, open: () => Promise<SuiteStore>): void {
describe(`device flow (${engine})`, () => {
  let opened: SuiteStore;
  let store: LoginStore;
  let flow: DeviceFlow;
  let now = 1_700_000_000_000;

  before(async () => {
    opened = await open();
    store = opened.store;
    await store.syncUsers(await testUsers());
    flow = new DeviceFlow(store, { clock: () => now, intervalS: 5, deviceCodeTtlS: 600, accessTokenTtlS: 600 });
  });
  after(() => opened?.close());

  it('answers authorization_pending, then slow_down adding 5 s each time, cumulatively', async () => {
    const g = await flow.authorize(request('dev_poll'));
    assert.equal(g.interval, 5);
    assert.match(g.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    await assert.rejects(flow.pollDeviceCode(g.device_code, 'aios-device'), oauthError('authorization_pending'));
    now += 1_000;
    await assert.rejects(flow.pollDeviceCode(g.device_code, 'aios-device'), (e) => oauthError('slow_down')(e) && /10 s/.test((e as Error).message));
    now += 6_000; // 6 s is enough for the old 5 s interval but not for the new 10 s one
    await assert.rejects(flow.pollDeviceCode(g.device_code, 'aios-device'), (e) => oauthError('slow_down')(e) && /15 s/.test((e as Error).message));
    now += 15_000;
    await assert.rejects(flow.pollDeviceCode(g.device_code, 'aios-device'), oauthError('authorization_pending'));
  });

  it('issues tokens once after approval, bound to the chosen workspace, user and device', async () => {
    const g = await flow.authorize(request('dev_ok'));
    const device = await flow.approve(g.user_code.toLowerCase().replace('-', ' '), 'usr_alice', 'ws_b');
    assert.equal(device.workspace_id, 'ws_b');
    now += 5_000;
    const t = await flow.pollDeviceCode(g.device_code, 'aios-device');
    assert.deepEqual([t.workspace_id, t.user_id, t.device_id, t.token_type, t.expires_in], ['ws_b', 'usr_alice', 'dev_ok', 'Bearer', 600]);
    assert.deepEqual(await flow.authenticate(t.access_token), { workspace_id: 'ws_b', user_id: 'usr_alice', device_id: 'dev_ok' });
    now += 5_000;
    await assert.rejects(flow.pollDeviceCode(g.device_code, 'aios-device'), oauthError('invalid_grant'));
    now += 600_000;
    assert.equal(await flow.authenticate(t.access_token), null, 'an expired access token no longer authenticates');
  });

  it('keeps only hashes of tokens in the database', async () => {
    const g = await flow.authorize(request('dev_hash'));
    await flow.approve(g.user_code, 'usr_alice', 'ws_a');
    now += 5_000;
    const t = await flow.pollDeviceCode(g.device_code, 'aios-device');
    const dump = await opened.dump();
    for (const secret of [t.access_token, t.refresh_token, g.device_code]) assert.ok(!dump.includes(secret), 'a raw token is in the database');
  });

  it('answers access_denied after a denial and expired_token after expiry', async () => {
    const denied = await flow.authorize(request('dev_denied'));
    await flow.deny(denied.user_code, 'usr_alice');
    now += 5_000;
    await assert.rejects(flow.pollDeviceCode(denied.device_code, 'aios-device'), oauthError('access_denied'));
    const late = await flow.authorize(request('dev_late'));
    now += 601_000;
    await assert.rejects(flow.pollDeviceCode(late.device_code, 'aios-device'), oauthError('expired_token'));
    await assert.rejects(flow.approve(late.user_code, 'usr_alice', 'ws_a'), ApprovalError, 'an expired code cannot be approved');
  });

  it('refuses approval into a workspace the user is not a member of', async () => {
    const g = await flow.authorize(request('dev_ws'));
    await assert.rejects(flow.approve(g.user_code, 'usr_bob', 'ws_a'), /not a member/);
  });

  it('rotates refresh tokens and revokes the whole chain when a spent one is replayed', async () => {
    const g = await flow.authorize(request('dev_rot'));
    await flow.approve(g.user_code, 'usr_alice', 'ws_a');
    now += 5_000;
    const first = await flow.pollDeviceCode(g.device_code, 'aios-device');
    const second = await flow.refresh(first.refresh_token, 'aios-device');
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.ok(await flow.authenticate(second.access_token));
    await assert.rejects(flow.refresh(first.refresh_token, 'aios-device'), (e) => oauthError('invalid_grant')(e) && /already used/.test((e as Error).message));
    assert.equal(await flow.authenticate(second.access_token), null, 'reuse revokes the tokens issued from the chain');
    await assert.rejects(flow.refresh(second.refresh_token, 'aios-device'), oauthError('invalid_grant'));
  });

  it('revoking a device stops its tokens; removing a user from the config does too', async () => {
    const g = await flow.authorize(request('dev_rev'));
    await flow.approve(g.user_code, 'usr_bob', 'ws_b');
    now += 5_000;
    const t = await flow.pollDeviceCode(g.device_code, 'aios-device');
    assert.ok(await flow.authenticate(t.access_token));
    assert.equal(await flow.revokeDevice('dev_rev'), true);
    assert.equal(await flow.authenticate(t.access_token), null);
    await assert.rejects(flow.refresh(t.refresh_token, 'aios-device'), oauthError('invalid_grant'));

    const g2 = await flow.authorize(request('dev_gone'));
    await flow.approve(g2.user_code, 'usr_bob', 'ws_b');
    now += 5_000;
    const t2 = await flow.pollDeviceCode(g2.device_code, 'aios-device');
    await store.syncUsers((await testUsers()).filter((u) => u.id !== 'usr_bob'));
    assert.equal(await flow.authenticate(t2.access_token), null, 'a user removed from the config loses access');
    await store.syncUsers(await testUsers());
  });

  it('pins the device key: a different key for the same device is refused until the device is revoked', async () => {
    const key = publicJwk();
    const g = await flow.authorize(request('dev_pin', key));
    await flow.approve(g.user_code, 'usr_alice', 'ws_a');
    const same = await flow.authorize(request('dev_pin', key));
    await assert.doesNotReject(flow.approve(same.user_code, 'usr_alice', 'ws_a'), 'a re-login with the pinned key is fine');
    // Another key is refused when it asks for a code (issue 13: no code for an id it cannot have) ...
    await assert.rejects(flow.authorize(request('dev_pin')), (e) => oauthError('invalid_request')(e) && /registered to another device/.test((e as Error).message));
    // ... and at approval, when it asked before the id was registered.
    const raced = await flow.authorize(request('dev_pin_race'));
    const owner = await flow.authorize(request('dev_pin_race', key));
    await flow.approve(owner.user_code, 'usr_alice', 'ws_a');
    await assert.rejects(flow.approve(raced.user_code, 'usr_alice', 'ws_a'), /different key/);
    const stolen = await flow.authorize(request('dev_pin', key));
    await assert.rejects(flow.approve(stolen.user_code, 'usr_bob', 'ws_b'), /another user/);
    await flow.revokeDevice('dev_pin');
    const fresh = await flow.authorize(request('dev_pin'));
    await assert.doesNotReject(flow.approve(fresh.user_code, 'usr_alice', 'ws_a'));
  });

  it('rejects malformed requests: unknown client, private key material, missing name', async () => {
    await assert.rejects(flow.authorize({ ...request('dev_x'), client_id: 'other' }), oauthError('invalid_client'));
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await assert.rejects(flow.authorize(request('dev_x', privateKey.export({ format: 'jwk' }) as JWK)), oauthError('invalid_request'));
    await assert.rejects(flow.authorize({ ...request('dev_x'), device_name: '' }), oauthError('invalid_request'));
  });

  it('normalises what users type and rejects what cannot be a code', () => {
    assert.equal(normaliseUserCode(' wdjb mjht '), 'WDJB-MJHT');
    assert.equal(normaliseUserCode('WDJB-MJHA'), null, 'vowels are not in the alphabet');
    assert.equal(normaliseUserCode('WDJB'), null);
  });
});
}
