/**
 * Runs inside scripts/with-keyring.sh (see keychain.test.ts): a private D-Bus session, an unlocked
 * gnome-keyring, a temp HOME. Never run against a real user's keychain.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { describe, it, before } from 'node:test';
import { compactVerify, CompactSign, importJWK } from 'jose';
import { loadOrCreateDeviceKey, deviceKeyAccount } from '../../src/identity/device-key.js';
import { KeychainSecretStore, openSecretStore } from '../../src/identity/secret-store.js';

describe('OS keychain (gnome-keyring)', () => {
  before(() => {
    assert.equal(process.env['AIOS_KEYRING_SANDBOX'], '1', 'run through keychain.test.ts, never against a real keychain');
    assert.ok(process.env['HOME']?.startsWith(tmpdir()), 'HOME must be the sandbox temp dir');
  });

  it('stores, reads and deletes secrets', async () => {
    const store = await openSecretStore();
    await store.set('dev_test/tokens', '{"access_token":"x"}');
    assert.equal(await store.get('dev_test/tokens'), '{"access_token":"x"}');
    assert.equal(await store.get('dev_other/tokens'), null, 'entries are per account');
    assert.equal(await store.delete('dev_test/tokens'), true);
    assert.equal(await store.get('dev_test/tokens'), null);
  });

  it('keeps the device private key in the keychain and signs with it', async () => {
    const store = new KeychainSecretStore();
    const key = await loadOrCreateDeviceKey(store, 'dev_keytest');
    const again = await loadOrCreateDeviceKey(store, 'dev_keytest');
    assert.equal(again.kid, key.kid, 'the same key comes back');
    assert.ok((await store.get(deviceKeyAccount('dev_keytest')))?.includes('"d"'), 'the private JWK is in the keychain');
    assert.equal(key.publicJwk.d, undefined, 'the public JWK carries no private part');
    const jws = await new CompactSign(new TextEncoder().encode('card')).setProtectedHeader({ alg: 'ES256', kid: key.kid }).sign(key.privateKey);
    const { payload } = await compactVerify(jws, await importJWK(key.publicJwk, 'ES256'));
    assert.equal(new TextDecoder().decode(payload), 'card');
  });

  it('says clearly when no Secret Service is reachable', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/login/fixtures/probe-keychain.ts'], {
      encoding: 'utf8',
      env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: `unix:path=${tmpdir()}/no-such-bus` },
    });
    const out = JSON.parse(r.stdout) as { ok: boolean; code?: string; message?: string };
    assert.equal(out.ok, false);
    assert.equal(out.code, 'secret_store_unavailable');
    assert.match(out.message ?? '', /No OS keychain is reachable.*Secret Service.*bridge\.token_file/);
  });
});
