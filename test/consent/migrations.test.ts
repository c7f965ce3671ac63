import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openConsentDb, SCHEMA_VERSION, CONSENT_DB_FILE } from '../../src/consent/db.js';
import { DecisionsStore } from '../../src/consent/decisions-store.js';
import { AuditLog } from '../../src/consent/audit-log.js';
import { SchemaTooNewError } from '../../src/storage/migrations.js';
import { tempDir } from './helpers.js';

test('migration 1 creates the schema in a data directory that already holds other files and rows', () => {
  const t = tempDir();
  try {
    // A database left by something else in the same file name must not be clobbered: rows it holds survive.
    const pre = new Database(path.join(t.dir, CONSENT_DB_FILE));
    pre.exec('CREATE TABLE legacy (x TEXT); INSERT INTO legacy VALUES (\'kept\')');
    pre.close();
    const db = openConsentDb(t.dir, { upTo: 1 });
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
    assert.throws(() => openConsentDb(t.dir), (e: unknown) => e instanceof SchemaTooNewError && e.found === SCHEMA_VERSION + 1 && /consent database .* newer than this program/.test(e.message));
    const after = new Database(path.join(t.dir, CONSENT_DB_FILE));
    assert.equal(after.pragma('user_version', { simple: true }), SCHEMA_VERSION + 1, 'not changed');
    after.close();
  } finally {
    t.cleanup();
  }
});

test('migration 2 adds the audit rows\' resources to a database that holds audit rows and decisions', () => {
  const t = tempDir();
  try {
    const v1 = openConsentDb(t.dir, { upTo: 1 });
    v1.prepare(`INSERT INTO audit (call_id, function_id, state, finished_at) VALUES ('c1', 'files.read_text', 'completed', '2026-12-01T00:00:00.000Z')`).run();
    new DecisionsStore(v1, null).remember({ userId: 'u', functionId: 'a.b', resource: 'files:/srv/a', effect: 'allow', scope: 'always' });
    v1.close();
    const v2 = openConsentDb(t.dir, { upTo: 2 });
    assert.equal(v2.pragma('user_version', { simple: true }), 2);
    assert.equal((v2.prepare(`SELECT resources FROM audit WHERE call_id = 'c1'`).get() as { resources: unknown }).resources, null, 'an old row names no resources');
    v2.close();
    // Rows are written by this build's AuditLog, which needs the current schema (later migrations add columns).
    const cur = openConsentDb(t.dir);
    const log = new AuditLog(cur, 30);
    const [old] = log.list();
    assert.equal(old?.call_id, 'c1');
    const at = new Date().toISOString();
    log.record({
      outcome: { call_id: 'c2', function: 'files.read_text', state: 'completed', output: {}, output_valid: true, error: null, replayed: false, accepted_at: at, started_at: at, finished_at: at, duration_ms: 1 },
      descriptor: undefined, args: undefined, requester: undefined, workspaceId: 'w', userId: 'u',
      resources: [{ kind: 'files', id: '/srv/a', label: 'Documents', granted: true }],
    });
    assert.deepEqual(log.list()[0]?.resources, [{ kind: 'files', label: 'Documents' }], 'the alias, not the path');
    assert.equal(new DecisionsStore(cur).list().length, 1, 'decisions survive');
    log.close();
    cur.close();
  } finally {
    t.cleanup();
  }
});

test('migration 3 drops remembered allows for any resource (they may come from prompts that showed none), keeps the rest', () => {
  const t = tempDir();
  try {
    const v2 = openConsentDb(t.dir, { upTo: 2 });
    const old = new DecisionsStore(v2, null);
    old.remember({ userId: 'u', functionId: 'files.write_text', resource: '*', effect: 'allow', scope: 'always' });
    old.remember({ userId: 'u', functionId: 'files.write_text', resource: 'files:/srv/a', effect: 'allow', scope: 'always' });
    old.remember({ userId: 'u', functionId: 'camera.capture', resource: '*', effect: 'deny', scope: 'always' });
    v2.close();
    const v3 = openConsentDb(t.dir, { upTo: 3 });
    assert.equal(v3.pragma('user_version', { simple: true }), 3);
    const left = new DecisionsStore(v3).list().map((d) => `${d.effect} ${d.function_id} ${d.resource}`).sort();
    assert.deepEqual(left, ['allow files.write_text files:/srv/a', 'deny camera.capture *']);
    v3.close();
  } finally {
    t.cleanup();
  }
});

test('migration 4 adds the attested runtime to audit rows of a database that holds audit rows', () => {
  const t = tempDir();
  try {
    const v3 = openConsentDb(t.dir, { upTo: 3 });
    v3.prepare(`INSERT INTO audit (call_id, function_id, state, finished_at) VALUES ('c1', 'device.info', 'completed', '2026-12-01T00:00:00.000Z')`).run();
    v3.close();
    const v4 = openConsentDb(t.dir, { upTo: 4 });
    assert.equal(v4.pragma('user_version', { simple: true }), 4);
    const log = new AuditLog(v4, 30);
    const [old] = log.list();
    assert.equal(old?.call_id, 'c1');
    assert.equal(old?.runtime_id, null, 'an old row names no runtime');
    const at = new Date().toISOString();
    log.record({
      outcome: { call_id: 'c2', function: 'device.info', state: 'completed', output: {}, output_valid: true, error: null, replayed: false, accepted_at: at, started_at: at, finished_at: at, duration_ms: 1 },
      descriptor: undefined, args: undefined, requester: undefined, runtime: { id: 'rt_a', name: 'A' }, workspaceId: 'w', userId: 'u',
    });
    assert.deepEqual([log.list()[0]?.runtime_id, log.list()[0]?.runtime_name], ['rt_a', 'A']);
    log.close();
    v4.close();
  } finally {
    t.cleanup();
  }
});
