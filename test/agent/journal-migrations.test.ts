/** The journal's migrations, each on a database that holds rows of the version before it (the runner: migrations.test.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Journal } from '../../src/agent/journal.js';
import { JOURNAL_SCHEMA } from '../../src/storage/journal-table.js';
import { migrate, SchemaTooNewError } from '../../src/storage/migrations.js';
import { tempDir } from '../helpers/stack.js';

const scope = { workspaceId: 'ws', deviceId: 'dev' };
const indexes = (db: Database.Database) =>
  (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as { name: string }[]).map((r) => r.name);

function withDb(body: (path: string, db: Database.Database) => void): void {
  const dir = tempDir();
  try {
    const path = join(dir, 'j.sqlite');
    const db = new Database(path);
    try {
      body(path, db);
    } finally {
      if (db.open) db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const insert = (db: Database.Database, id: string, state: string, outcome: string | null) =>
  db.prepare(`INSERT INTO calls (workspace_id, device_id, call_id, function, args_digest, state, outcome, delivered, created_ms, updated_ms) VALUES ('ws', 'dev', ?, 'f.x', 'd', ?, ?, 0, 1, 1)`).run(id, state, outcome);

test('migration 1 creates calls and meta beside rows something else left in the file', () => {
  withDb((_path, db) => {
    db.exec(`CREATE TABLE legacy (x TEXT); INSERT INTO legacy VALUES ('kept')`);
    assert.deepEqual(migrate(db, JOURNAL_SCHEMA, { upTo: 1 }), [1]);
    insert(db, 'c1', 'running', null);
    assert.deepEqual(db.prepare('SELECT x FROM legacy').all(), [{ x: 'kept' }]);
    assert.deepEqual(indexes(db), ['calls_by_state']);
  });
});

test('migration 2 adds the outbox and listing indexes to a version-1 journal holding calls, keeping them', () => {
  withDb((_path, db) => {
    migrate(db, JOURNAL_SCHEMA, { upTo: 1 });
    insert(db, 'c1', 'running', null);
    insert(db, 'c2', 'completed', '{"call_id":"c2"}');
    db.prepare(`INSERT INTO meta (key, value) VALUES ('functions_revision', '7')`).run();
    assert.deepEqual(migrate(db, JOURNAL_SCHEMA, { upTo: 2 }), [2]);
    assert.deepEqual(indexes(db), ['calls_by_state', 'calls_by_time', 'calls_outbox']);
    assert.deepEqual(db.prepare(`SELECT call_id FROM calls WHERE delivered = 0 AND outcome IS NOT NULL`).pluck().all(), ['c2'], 'the outbox query finds the undelivered outcome');
    assert.equal(db.prepare('SELECT count(*) FROM calls').pluck().get(), 2);
  });
});

test('migration 3 drops the hot-path indexes from a version-2 journal holding calls; the journal reads them after', () => {
  withDb((path, db) => {
    migrate(db, JOURNAL_SCHEMA, { upTo: 2 });
    insert(db, 'c1', 'running', null);
    insert(db, 'c2', 'completed', JSON.stringify({ call_id: 'c2', function: 'f.x', state: 'completed', output: {}, error: null, replayed: false }));
    db.prepare(`INSERT INTO meta (key, value) VALUES ('functions_revision', '7')`).run();
    db.close();
    const j = new Journal(path, scope);
    try {
      assert.equal(j.db.pragma('user_version', { simple: true }), 3);
      assert.deepEqual(indexes(j.db), ['calls_outbox']);
      assert.equal(j.get('c1')?.state, 'running');
      assert.equal(j.get('c2')?.outcome?.state, 'completed');
      assert.equal(j.metaGet('functions_revision'), '7');
      assert.deepEqual(j.outbox().map((o) => o.call_id), ['c2']);
    } finally {
      j.close();
    }
  });
});

test('a journal from a newer build is refused with a typed error and not changed', () => {
  withDb((path, db) => {
    migrate(db, JOURNAL_SCHEMA);
    insert(db, 'c1', 'running', null);
    db.pragma('user_version = 99');
    db.close();
    assert.throws(() => new Journal(path, scope), (e: unknown) => e instanceof SchemaTooNewError && /journal database .* newer than this program/.test(e.message));
    const again = new Database(path);
    assert.equal(again.pragma('user_version', { simple: true }), 99);
    assert.equal(again.prepare('SELECT count(*) FROM calls').pluck().get(), 1);
    again.close();
  });
});
