/** The journal: migrations over rows, group commit, replay data, recovery, outbox, retention. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Journal, JOURNAL_MIGRATIONS } from '../../src/agent/journal.js';
import { migrate } from '../../src/storage/sqlite.js';
import type { Outcome } from '../../src/protocol/messages.js';
import { tempDir } from '../helpers/stack.js';

const scope = { workspaceId: 'ws', deviceId: 'dev' };
const outcome = (id: string, state: Outcome['state'] = 'completed'): Outcome => ({
  call_id: id, function: 'f.x', state, output: { ok: true }, output_valid: true, error: null, replayed: false,
  accepted_at: new Date().toISOString(), started_at: new Date().toISOString(), finished_at: new Date().toISOString(), duration_ms: 1,
});

test('migrations 2 and 3 apply to a version-1 database that holds rows, keeping them', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'j.sqlite');
    const db = new Database(path);
    migrate(db, JOURNAL_MIGRATIONS.filter((m) => m.version === 1));
    db.prepare(`INSERT INTO calls (workspace_id, device_id, call_id, function, args_digest, state, created_ms, updated_ms) VALUES ('ws','dev','c1','f.x','d','running',1,1)`).run();
    db.close();
    const j = new Journal(path, scope);
    assert.equal(j.db.pragma('user_version', { simple: true }), JOURNAL_MIGRATIONS.at(-1)!.version);
    assert.deepEqual((j.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' AND name NOT LIKE 'sqlite_%'`).all() as { name: string }[]).map((r) => r.name), ['calls_outbox']);
    assert.equal(j.get('c1')?.state, 'running');
    j.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a newer schema than the program knows is refused, not damaged', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'j.sqlite');
    const db = new Database(path);
    db.pragma('user_version = 99');
    db.close();
    assert.throws(() => new Journal(path, scope), /newer than this program/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('writes in one tick share one commit, each resolves after it; a duplicate fails only itself', async () => {
  const dir = tempDir();
  const j = new Journal(join(dir, 'j.sqlite'), scope);
  try {
    const before = j.db.prepare('SELECT count(*) n FROM calls');
    const ps = Array.from({ length: 20 }, (_, i) => j.accept('c' + i, 'f.x', 'd', new Date().toISOString()));
    assert.equal((before.get() as { n: number }).n, 0, 'nothing is visible before the group commits');
    const dup = j.accept('c0', 'f.x', 'd', new Date().toISOString());
    await Promise.all(ps);
    await assert.rejects(dup);
    assert.equal((before.get() as { n: number }).n, 20);
  } finally {
    j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('recovery: running → unknown (possible), accepted/awaiting → failed (none), into the outbox; delivered leaves it', async () => {
  const dir = tempDir();
  const path = join(dir, 'j.sqlite');
  let j = new Journal(path, scope);
  try {
    await j.accept('run', 'f.x', 'd', new Date().toISOString());
    await j.setState('run', 'running', new Date().toISOString());
    await j.accept('wait', 'f.x', 'd', new Date().toISOString());
    await j.setState('wait', 'awaiting_confirmation');
    await j.accept('done', 'f.x', 'd', new Date().toISOString());
    await j.finish(outcome('done'), true);
    j.close();
    j = new Journal(path, scope);
    const rec = j.recover();
    const by = Object.fromEntries(rec.map((o) => [o.call_id, o]));
    assert.equal(by['run']?.state, 'unknown');
    assert.equal(by['run']?.error?.side_effects, 'possible');
    assert.equal(by['wait']?.state, 'failed');
    assert.equal(by['wait']?.error?.side_effects, 'none');
    assert.equal(by['done'], undefined, 'finished calls are untouched');
    assert.deepEqual(j.outbox().map((o) => o.call_id).sort(), ['run', 'wait']);
    await j.markDelivered(['run', 'wait']);
    assert.equal(j.outbox().length, 0);
    assert.equal(j.recover().length, 0, 'recovery is idempotent');
  } finally {
    j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('retention removes only delivered, finished rows older than the window', async () => {
  const dir = tempDir();
  const j = new Journal(join(dir, 'j.sqlite'), scope);
  try {
    await j.accept('old', 'f.x', 'd', new Date().toISOString());
    await j.finish(outcome('old'), true);
    await j.accept('undelivered', 'f.x', 'd', new Date().toISOString());
    await j.finish(outcome('undelivered'), false);
    await j.accept('open', 'f.x', 'd', new Date().toISOString());
    assert.equal(j.sweep(60, Date.now() + 3600_000), 1);
    assert.equal(j.get('old'), undefined);
    assert.ok(j.get('undelivered'), 'undelivered outcomes are never dropped');
    assert.ok(j.get('open'));
  } finally {
    j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
