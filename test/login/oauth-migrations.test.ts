/** The bridge login store's migrations, each on a database that holds rows (the runner: test/storage/migrations.test.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { migrateOAuth, OAuthStore, MIGRATIONS } from '../../src/bridge/oauth/oauth-store.js';
import { SchemaTooNewError } from '../../src/storage/migrations.js';
import { tempDir } from './helpers.js';

function withDb(body: (db: Database.Database) => void): void {
  const tmp = tempDir();
  const db = new Database(join(tmp.dir, 'oauth.sqlite'));
  try {
    body(db);
  } finally {
    db.close();
    tmp.remove();
  }
}

const addDevice = (db: Database.Database) => {
  db.prepare(`INSERT INTO oauth_users (id, name, password_hash) VALUES ('u', 'u', 'h')`).run();
  db.prepare(`INSERT INTO oauth_memberships (user_id, workspace_id) VALUES ('u', 'w')`).run();
  db.prepare(
    `INSERT INTO oauth_devices (id, user_id, workspace_id, name, platform, client_version, public_jwk, jwk_thumbprint, approved_at)
     VALUES ('d', 'u', 'w', 'n', 'p', '1.0.0', '{}', 't', 1)`,
  ).run();
  db.prepare(`INSERT INTO oauth_tokens (token_hash, kind, device_id, family_id, expires_at, created_at) VALUES ('th', 'refresh', 'd', 'f', 9999999999999, 1)`).run();
};

test('migration 1 creates the login tables beside rows something else left in the file', () => {
  withDb((db) => {
    db.exec(`CREATE TABLE legacy (x TEXT); INSERT INTO legacy VALUES ('kept')`);
    assert.deepEqual(migrateOAuth(db, { upTo: 1 }), [1]);
    addDevice(db);
    assert.deepEqual(db.prepare('SELECT x FROM legacy').all(), [{ x: 'kept' }]);
    assert.equal(db.pragma('user_version', { simple: true }), 1);
  });
});

test('migration 2 adopts a database the old runner migrated (versions in oauth_migrations), keeps its rows and drops that table', () => {
  withDb((db) => {
    // What the runner before the shared one left: the tables, its bookkeeping table, user_version 0.
    db.exec('CREATE TABLE oauth_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
    MIGRATIONS[0]!.up(db);
    db.prepare('INSERT INTO oauth_migrations (version, applied_at) VALUES (1, 1)').run();
    addDevice(db);
    assert.equal(db.pragma('user_version', { simple: true }), 0);
    assert.deepEqual(migrateOAuth(db), [2], 'migration 1 is not run again on its tables');
    assert.equal(db.pragma('user_version', { simple: true }), 2);
    assert.equal(db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'oauth_migrations'`).get(), undefined);
    const store = new OAuthStore(db);
    assert.equal(store.userName('u'), 'u');
    assert.deepEqual(store.workspacesOf('u'), ['w']);
    assert.equal(db.prepare('SELECT count(*) FROM oauth_tokens').pluck().get(), 1);
    assert.deepEqual(migrateOAuth(db), [], 'reopening runs nothing');
  });
});

test('a login database from a newer build is refused with a typed error and not changed', () => {
  withDb((db) => {
    migrateOAuth(db);
    addDevice(db);
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    assert.throws(() => new OAuthStore(db), SchemaTooNewError);
    assert.equal(db.prepare('SELECT count(*) FROM oauth_devices').pluck().get(), 1);
    assert.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.length + 1);
  });
});
