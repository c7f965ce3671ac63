/** The bridge store's migrations over a database that holds rows. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { BridgeStore, BRIDGE_MIGRATIONS, BRIDGE_SCHEMA, cardDigest } from '../../src/bridge/store.js';
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
    assert.equal(store.db.pragma('user_version', { simple: true }), BRIDGE_MIGRATIONS.length);
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

test('migration 4 drops the redundant device index of a version-3 store; its calls are still found by device', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'bridge.sqlite');
    const db = new Database(path);
    migrate(db, BRIDGE_SCHEMA, { upTo: 3 });
    db.prepare(`INSERT INTO bridge_calls (workspace_id, call_id, device_id, function, args_digest, params, state, timeline, deadline_ms, created_at, updated_at)
      VALUES ('ws', 'c1', 'dev', 'f.x', 'd', '{}', 'running', '[]', 0, 't', 't')`).run();
    assert.ok(db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'bridge_calls_device'`).get());
    db.close();
    const store = new BridgeStore(path);
    assert.equal(store.db.pragma('user_version', { simple: true }), BRIDGE_MIGRATIONS.length);
    assert.equal(store.db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'bridge_calls_device'`).get(), undefined);
    assert.equal(store.findByDevice('ws', 'dev', 'c1')?.state, 'running');
    assert.equal(store.findByDevice('ws', 'dev_other', 'c1'), undefined, 'a call is found only with its own device');
    const plan = store.db.prepare(`EXPLAIN QUERY PLAN SELECT * FROM bridge_calls WHERE workspace_id = ? AND device_id = ? AND call_id = ?`).all('ws', 'dev', 'c1') as { detail: string }[];
    assert.match(plan.map((p) => p.detail).join(' '), /USING INDEX sqlite_autoindex_bridge_calls_1/, 'the lookup uses the primary key, not a scan');
    store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('migration 5 gives a version-4 store\'s cards their digest; records leave the card on disk, adapterCard reads it', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'bridge.sqlite');
    const db = new Database(path);
    migrate(db, BRIDGE_SCHEMA, { upTo: 4 });
    const card = { adapter: { id: 'aios.device.dev', name: 'Dev' }, skills: [{ id: 'a.b' }] };
    db.prepare(`INSERT INTO bridge_devices (workspace_id, device_id, user_id, adapter_card) VALUES ('ws', 'dev', 'u', ?)`).run(JSON.stringify(card));
    db.prepare(`INSERT INTO bridge_devices (workspace_id, device_id, user_id) VALUES ('ws', 'bare', 'u')`).run();
    db.close();
    const store = new BridgeStore(path);
    assert.equal(store.db.pragma('user_version', { simple: true }), BRIDGE_MIGRATIONS.length);
    const d = store.getDevice('ws', 'dev')!;
    assert.equal(d.adapter_card_digest, cardDigest(card));
    assert.ok(!('adapter_card' in d), 'the record in memory holds no card');
    assert.deepEqual(store.adapterCard('ws', 'dev'), card);
    assert.equal(store.getDevice('ws', 'bare')!.adapter_card_digest, null);
    assert.equal(store.adapterCard('ws', 'bare'), null);
    // An update of other fields leaves the card and its digest alone; a new card replaces both.
    store.upsertDevice({ workspace_id: 'ws', device_id: 'dev', user_id: 'u', name: 'renamed' });
    assert.deepEqual(store.adapterCard('ws', 'dev'), card);
    assert.equal(store.getDevice('ws', 'dev')!.name, 'renamed');
    const card2 = { ...card, skills: [] };
    store.upsertDevice({ workspace_id: 'ws', device_id: 'dev', user_id: 'u', adapter_card: card2 });
    assert.equal(store.getDevice('ws', 'dev')!.adapter_card_digest, cardDigest(card2));
    assert.deepEqual(store.adapterCard('ws', 'dev'), card2);
    store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('migration 8 gives a version-7 store\'s devices last_closed (null), which then keeps { at, type, message }', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'bridge.sqlite');
    const db = new Database(path);
    migrate(db, BRIDGE_SCHEMA, { upTo: 7 });
    db.prepare(`INSERT INTO bridge_devices (workspace_id, device_id, user_id, name, functions) VALUES ('ws', 'dev', 'u', 'Front desk', '[{"id":"a.b"}]')`).run();
    db.close();
    const store = new BridgeStore(path);
    assert.equal(store.db.pragma('user_version', { simple: true }), BRIDGE_MIGRATIONS.length);
    const d = store.getDevice('ws', 'dev')!;
    assert.equal(d.name, 'Front desk');
    assert.deepEqual(d.functions, [{ id: 'a.b' }]);
    assert.equal(d.last_closed, null);
    const closed = { at: '2026-12-04T14:00:00.000Z', type: 'device_limits_exceeded', message: 'The device sent too much.' };
    store.upsertDevice({ workspace_id: 'ws', device_id: 'dev', user_id: 'u', last_closed: closed });
    store.close();
    const again = new BridgeStore(path);
    assert.deepEqual(again.getDevice('ws', 'dev')?.last_closed, closed);
    assert.equal(again.getDevice('ws', 'dev')?.name, 'Front desk');
    again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
