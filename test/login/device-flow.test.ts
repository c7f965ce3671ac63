/**
 * The device-flow suite (device-flow-suite.ts) on SQLite, the single process's `oauth.sqlite` in a temp dir; and
 * password hashing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { OAuthStore } from '../../src/bridge/oauth/oauth-store.js';
import { SqliteLoginStore } from '../../src/bridge/oauth/login-store.js';
import { hashPassword, verifyPassword } from '../../src/base/password.js';
import { tempDir, TEST_COST } from './helpers.js';
import { deviceFlowSuite } from './device-flow-suite.js';

deviceFlowSuite('sqlite', async () => {
  const tmp = tempDir();
  const db = new Database(join(tmp.dir, 'bridge.sqlite'));
  db.pragma('journal_mode = WAL');
  return {
    store: new SqliteLoginStore(new OAuthStore(db)),
    dump: async () => JSON.stringify(['oauth_tokens', 'oauth_device_codes', 'oauth_devices'].flatMap((table) => db.prepare(`SELECT * FROM ${table}`).all())),
    close: async () => {
      db.close();
      tmp.remove();
    },
  };
});

describe('password hashing', () => {
  it('verifies the right password only, and fails for unknown users', async () => {
    const h = await hashPassword('correct horse', TEST_COST);
    assert.match(h, /^scrypt\$1024\$8\$1\$/);
    assert.notEqual(h, await hashPassword('correct horse', TEST_COST), 'each hash has its own salt');
    assert.equal(await verifyPassword('correct horse', h), true);
    assert.equal(await verifyPassword('wrong horse', h), false);
    assert.equal(await verifyPassword('correct horse', null), false);
    assert.equal(await verifyPassword('x', 'plaintext'), false);
  });
});
