/** The bridge store's migrations over a database that holds rows. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { BridgeStore, BRIDGE_MIGRATIONS } from '../../src/bridge/store.js';
import { migrate } from '../../src/storage/sqlite.js';
import { tempDir } from '../helpers/stack.js';

test('migration 2 (device index) applies to a version-1 store with calls and devices, keeping them', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'bridge.sqlite');
    const db = new Database(path);
    migrate(db, BRIDGE_MIGRATIONS.filter((m) => m.version === 1));
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
