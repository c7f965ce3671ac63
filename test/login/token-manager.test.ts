/**
 * TokenManager against a real token file and a scripted refresh endpoint: background refresh before
 * expiry, single flight, and what a definitive refusal does.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { OAuthClientError, type TokenGrant } from '../../src/identity/oauth-client.js';
import { FileSecretStore } from '../../src/identity/secret-store.js';
import { readTokens, TokenManager, tokensAccount, type StoredTokens } from '../../src/identity/token-manager.js';
import { WireError } from '../../src/protocol/errors.js';
import { tempDir } from './helpers.js';

function grant(n: number): TokenGrant {
  return { access_token: `at${n}`, token_type: 'Bearer', expires_in: 600, refresh_token: `rt${n}`, workspace_id: 'ws', user_id: 'usr', device_id: 'dev_x' };
}

async function seeded(dir: string, expiresInMs: number): Promise<FileSecretStore> {
  const store = new FileSecretStore(join(dir, 'secrets.json'));
  const now = Date.now();
  const t: StoredTokens = { access_token: 'at0', access_expires_at: now + expiresInMs, access_issued_at: now - 4 * expiresInMs, refresh_token: 'rt0', workspace_id: 'ws', user_id: 'usr', device_id: 'dev_x' };
  await store.set(tokensAccount('dev_x'), JSON.stringify(t));
  return store;
}

describe('token manager', () => {
  it('refreshes in the background before the access token expires, and keeps the new one', async () => {
    const tmp = tempDir();
    try {
      const store = await seeded(tmp.dir, 1_000);
      let refreshed!: () => void;
      const done = new Promise<void>((r) => (refreshed = r));
      const tm = new TokenManager({
        store,
        deviceId: 'dev_x',
        refresh: async (rt) => {
          assert.equal(rt, 'rt0');
          refreshed();
          return grant(1);
        },
      });
      // The manager's timer is unref'd (it must not keep an agent alive); this handle keeps the test alive instead.
      const keepAlive = setInterval(() => undefined, 60_000);
      tm.start();
      await done;
      tm.stop();
      clearInterval(keepAlive);
      assert.equal(await tm.getAccessToken(), 'at1');
      assert.equal((await readTokens(store, 'dev_x'))?.refresh_token, 'rt1');
    } finally {
      tmp.remove();
    }
  });

  it('keeps the tokens on a transient failure and drops them on invalid_grant', async () => {
    const tmp = tempDir();
    try {
      const store = await seeded(tmp.dir, 600_000);
      let answer: () => Promise<TokenGrant> = () => Promise.reject(new OAuthClientError('bridge_unreachable', 'The bridge could not be reached (ECONNREFUSED).'));
      const tm = new TokenManager({ store, deviceId: 'dev_x', refresh: () => answer() });
      await assert.rejects(tm.onUnauthorized('at0'), /could not be reached/);
      assert.ok(await readTokens(store, 'dev_x'), 'a network failure keeps the tokens for the next try');
      answer = () => Promise.reject(new OAuthClientError('invalid_grant', 'The refresh token was revoked; sign in again.', 400));
      await assert.rejects(tm.onUnauthorized('at0'), (e) => e instanceof WireError && e.type === 'unauthorized' && !/rt0|at0/.test(e.message));
      assert.equal(await readTokens(store, 'dev_x'), null);
    } finally {
      tmp.remove();
    }
  });
});
