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
    assert.equal(store.db.pragma('user_version', { simple: true }), 2);
    assert.equal(store.findByDevice('dev', 'c1')?.state, 'running');
    assert.equal(store.openCalls('dev').length, 1);
    assert.equal(store.getDevice('dev')?.workspace_id, 'ws');
    store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
