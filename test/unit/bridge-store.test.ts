/** The bridge store's migrations over a database that holds rows. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { BridgeStore, BRIDGE_SCHEMA } from '../../src/bridge/store.js';
import { migrate } from '../../src/storage/migrations.js';
import { tempDir } from '../helpers/stack.js';

test('migration 1 creates the store beside rows something else left in the file', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'bridge.sqlite');
    const db = new Database(path);
    db.exec(`CREATE TABLE legacy (x TEXT); INSERT INTO legacy VALUES ('kept')`);
    assert.deepEqual(migrate(db, BRIDGE_SCHEMA, { upTo: 1 }), [1]);
    db.prepare(`INSERT INTO bridge_devices (device_id, workspace_id, user_id) VALUES ('dev', 'ws', 'u')`).run();
    assert.deepEqual(db.prepare('SELECT x FROM legacy').all(), [{ x: 'kept' }]);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('migration 2 (device index) applies to a version-1 store with calls and devices, keeping them', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'bridge.sqlite');
    const db = new Database(path);
    migrate(db, BRIDGE_SCHEMA, { upTo: 1 });
    db.prepare(`INSERT INTO bridge_calls (workspace_id, call_id, device_id, function, args_digest, params, state, timeline, deadline_ms, created_at, updated_at)
      VALUES ('ws', 'c1', 'dev', 'f.x', 'd', '{}', 'running', '[]', 0, 't', 't')`).run();
    db.prepare(`INSERT INTO bridge_devices (device_id, workspace_id, user_id, name) VALUES ('dev', 'ws', 'u', 'n')`).run();
    assert.deepEqual(migrate(db, BRIDGE_SCHEMA, { upTo: 2 }), [2]);
    assert.ok(db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'bridge_calls_device'`).get(), 'the index exists');
    assert.equal((db.prepare(`SELECT state FROM bridge_calls WHERE call_id = 'c1'`).get() as { state: string }).state, 'running');
    assert.equal((db.prepare(`SELECT name FROM bridge_devices WHERE device_id = 'dev'`).get() as { name: string }).name, 'n');
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('migration 3 (devices keyed by workspace and device) applies to a version-2 store with calls and devices, keeping them', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'bridge.sqlite');
    const db = new Database(path);
    migrate(db, BRIDGE_SCHEMA, { upTo: 2 });
    db.prepare(`INSERT INTO bridge_calls (workspace_id, call_id, device_id, function, args_digest, params, state, timeline, deadline_ms, created_at, updated_at)
      VALUES ('ws', 'c1', 'dev', 'f.x', 'd', '{}', 'running', '[]', 0, 't', 't')`).run();
    db.prepare(`INSERT INTO bridge_devices (device_id, workspace_id, user_id) VALUES ('dev', 'ws', 'u')`).run();
    db.close();
    const store = new BridgeStore(path);
    assert.equal(store.db.pragma('user_version', { simple: true }), 3);
    assert.equal(store.findByDevice('ws', 'dev', 'c1')?.state, 'running');
    assert.equal(store.findByDevice('ws_other', 'dev', 'c1'), undefined, 'a call is found only with its own workspace');
    assert.equal(store.openCalls('dev').length, 1);
    assert.equal(store.getDevice('ws', 'dev')?.user_id, 'u');
    assert.equal(store.getDevice('ws_other', 'dev'), undefined);
    // The same device id in another workspace is another device: it neither moves nor overwrites this one.
    store.upsertDevice({ workspace_id: 'ws_other', user_id: 'u2', device_id: 'dev', name: 'other' });
    assert.equal(store.getDevice('ws', 'dev')?.user_id, 'u');
    assert.equal(store.getDevice('ws_other', 'dev')?.name, 'other');
    assert.deepEqual(store.devices('ws').map((d) => d.user_id), ['u']);
    store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
