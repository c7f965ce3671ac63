import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openConsentDb, SCHEMA_VERSION, CONSENT_DB_FILE } from '../../src/consent/db.js';
import { DecisionsStore } from '../../src/consent/decisions-store.js';
import { tempDir } from './helpers.js';

test('migration 1 creates the schema in a data directory that already holds other files and rows', () => {
  const t = tempDir();
  try {
    // A database left by something else in the same file name must not be clobbered: rows it holds survive.
    const pre = new Database(path.join(t.dir, CONSENT_DB_FILE));
    pre.exec('CREATE TABLE legacy (x TEXT); INSERT INTO legacy VALUES (\'kept\')');
    pre.close();
    const db = openConsentDb(t.dir);
    assert.equal(db.pragma('user_version', { simple: true }), 1);
    assert.deepEqual(db.prepare('SELECT x FROM legacy').all(), [{ x: 'kept' }]);
    const store = new DecisionsStore(db, 's1');
    store.remember({ userId: 'u', functionId: 'a.b', resource: '*', effect: 'allow', scope: 'always' });
    assert.equal(store.lookup('u', 'a.b', 'anything')?.effect, 'allow');
    db.close();
  } finally {
    t.cleanup();
  }
});

test('reopening a database at the current version keeps its rows (no migration re-runs)', () => {
  const t = tempDir();
  try {
    const a = openConsentDb(t.dir);
    new DecisionsStore(a, 's1').remember({ userId: 'u', functionId: 'a.b', resource: 'r', effect: 'deny', scope: 'always' });
    a.close();
    const b = openConsentDb(t.dir);
    assert.equal(b.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    assert.equal(new DecisionsStore(b).list().length, 1);
    assert.equal(b.pragma('journal_mode', { simple: true }), 'wal');
    b.close();
  } finally {
    t.cleanup();
  }
});

test('a database written by a newer build is refused with a message that says to upgrade', () => {
  const t = tempDir();
  try {
    const db = new Database(path.join(t.dir, CONSENT_DB_FILE));
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    assert.throws(() => openConsentDb(t.dir), /newer/);
  } finally {
    t.cleanup();
  }
});
