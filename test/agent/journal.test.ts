/** The journal: group commit, replay data, recovery, outbox, retention (its migrations: journal-migrations.test.ts). */
import { alive } from '../helpers/wait.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DuplicateCallError, Journal } from '../../src/agent/journal.js';
import type { IdFilter } from '../../src/storage/id-filter.js';
import type { Outcome } from '../../src/protocol/messages.js';
import { tempDir } from '../helpers/stack.js';

const scope = { workspaceId: 'ws', deviceId: 'dev' };
const outcome = (id: string, state: Outcome['state'] = 'completed'): Outcome => ({
  call_id: id, function: 'f.x', state, output: { ok: true }, output_valid: true, error: null, replayed: false,
  accepted_at: new Date().toISOString(), started_at: new Date().toISOString(), finished_at: new Date().toISOString(), duration_ms: 1,
});


test('writes in one tick share one log write, each resolves after it; a duplicate fails only itself', async () => {
  const dir = tempDir();
  const j = new Journal(join(dir, 'j.sqlite'), scope);
  try {
    const lines = () => readFileSync(j.logPath, 'utf8').split('\n').filter((l) => l && !l.startsWith('["h"')).length;
    const ps = Array.from({ length: 20 }, (_, i) => j.accept('c' + i, 'f.x', 'd', new Date().toISOString()));
    assert.equal(lines(), 0, 'nothing is logged before the group is written');
    const dup = j.accept('c0', 'f.x', 'd', new Date().toISOString());
    await assert.rejects(dup, DuplicateCallError);
    await Promise.all(ps);
    assert.equal(lines(), 20, 'the group is in the log once the promises resolve');
    assert.equal(j.get('c7')?.state, 'accepted', 'rows not yet in the table are read from memory');
    const count = j.db.prepare('SELECT count(*) n FROM calls');
    assert.equal((count.get() as { n: number }).n, 0, 'the table catches up later');
    j.checkpoint();
    assert.equal((count.get() as { n: number }).n, 20);
    assert.equal(lines(), 0, 'the log is emptied once the table has its rows');
    await assert.rejects(j.accept('c3', 'f.x', 'd', new Date().toISOString()), DuplicateCallError, 'a duplicate of a row in the table fails too');
  } finally {
    j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the table catches up once the journal is quiet, and at once past its row bound', async () => {
  const dir = tempDir();
  const j = new Journal(join(dir, 'j.sqlite'), scope);
  try {
    const count = j.db.prepare('SELECT count(*) n FROM calls');
    const n = () => (count.get() as { n: number }).n;
    const at = new Date().toISOString();
    const caughtUp = new Promise<void>((r) => (j.onBackgroundCheckpoint = r));
    await Promise.all(Array.from({ length: 10 }, (_, i) => j.accept('q' + i, 'f.x', 'd', at)));
    assert.equal(n(), 0, 'not while calls keep coming');
    await alive(caughtUp);
    assert.equal(n(), 10, 'caught up after a quiet spell');
    assert.equal(readFileSync(j.logPath, 'utf8'), '');
    // Past the row bound the catch-up starts at once, without a quiet spell: the writes keep coming here.
    const full = new Promise<void>((r) => (j.onBackgroundCheckpoint = r));
    let writing = true;
    const more = (async () => {
      for (let i = 0; writing; i++) {
        await j.accept('m' + i, 'f.x', 'd', at);
        await new Promise((r) => setImmediate(r));
      }
    })();
    await Promise.all(Array.from({ length: 8192 }, (_, i) => j.accept('b' + i, 'f.x', 'd', at)));
    await alive(full);
    writing = false;
    await more;
    assert.ok(n() >= 10 + 8192, 'a full batch is written while writes continue, not left to grow');
    assert.equal(j.get('b8191')?.state, 'accepted');
  } finally {
    j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * Runs `body` in a real process with `j`, a Journal on `path` for `scope`, and `at`, an ISO time, then
 * SIGKILLs that process, as a crash would stop it.
 */
function journalThenKill(path: string, scope: { workspaceId: string; deviceId: string }, body: string): void {
  const script = `
    import { Journal } from ${JSON.stringify(new URL('../../src/agent/journal.ts', import.meta.url).href)};
    const j = new Journal(${JSON.stringify(path)}, ${JSON.stringify(scope)});
    const at = new Date().toISOString();
    ${body}
    process.kill(process.pid, 'SIGKILL');
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.signal, 'SIGKILL', r.stderr);
}

test('a process killed before the table caught up loses nothing: the log is replayed at the next start', async () => {
  const dir = tempDir();
  const path = join(dir, 'j.sqlite');
  try {
    journalThenKill(path, { workspaceId: 'ws', deviceId: 'dev' }, `
      await j.accept('done', 'f.x', 'd1', at, 'running', at);
      await j.finish(${JSON.stringify(outcome('done'))}, false);
      await j.accept('running', 'f.x', 'd2', at, 'running', at);
      await j.accept('waiting', 'f.x', 'd3', at);
      await j.setState('waiting', 'awaiting_confirmation');
      await j.tombstone('tomb', ${JSON.stringify({ ...outcome('tomb', 'cancelled'), function: '' })});
      await j.markDelivered(['done']);
    `);
    assert.ok(readFileSync(`${path}.log`, 'utf8').split('\n').filter(Boolean).length >= 7, 'the writes were in the log only');
    const j = new Journal(path, scope);
    try {
      assert.equal(readFileSync(j.logPath, 'utf8'), '', 'the replayed log is emptied');
      assert.equal(j.get('done')?.outcome?.state, 'completed');
      assert.equal(j.get('done')?.argsDigest, 'd1');
      assert.equal(j.get('tomb')?.tombstone, true);
      const rec = Object.fromEntries(j.recover().map((o) => [o.call_id, o]));
      assert.equal(rec['running']?.state, 'unknown');
      assert.equal(rec['waiting']?.state, 'failed');
      assert.deepEqual(j.outbox().map((o) => o.call_id).sort(), ['running', 'waiting'], '"done" was delivered before the crash');
    } finally {
      j.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a log written under another identity is replayed into that identity, not the one starting now', async () => {
  const dir = tempDir();
  const path = join(dir, 'j.sqlite');
  try {
    journalThenKill(path, { workspaceId: 'ws_a', deviceId: 'dev_a' }, `await j.accept('from-a', 'f.x', 'd', at, 'running', at);`);
    assert.match(readFileSync(`${path}.log`, 'utf8'), /^\["h","ws_a","dev_a"\]\n/, 'the log names its identity first');
    // The same data directory, now signed in as another device.
    const j = new Journal(path, { workspaceId: 'ws_b', deviceId: 'dev_b' });
    try {
      assert.equal(j.get('from-a'), undefined, 'not this identity\'s call');
      assert.equal(j.recover().length, 0);
      const row = j.db.prepare(`SELECT workspace_id, device_id, state FROM calls WHERE call_id = 'from-a'`).get() as { workspace_id: string; device_id: string; state: string };
      assert.deepEqual(row, { workspace_id: 'ws_a', device_id: 'dev_a', state: 'running' }, 'kept for the identity that wrote it');
      await j.accept('from-b', 'f.x', 'd', new Date().toISOString());
      assert.match(readFileSync(j.logPath, 'utf8'), /^\["h","ws_b","dev_b"\]\n\["a","from-b"/);
    } finally {
      j.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('replaying a log the table already holds changes nothing; a torn last line is dropped', async () => {
  const dir = tempDir();
  const path = join(dir, 'j.sqlite');
  try {
    let j = new Journal(path, scope);
    const at = new Date().toISOString();
    await j.accept('a', 'f.x', 'd', at, 'running', at);
    await j.finish(outcome('a'), false);
    await j.markDelivered(['a']);
    await j.accept('b', 'f.x', 'd', at);
    const log = readFileSync(j.logPath, 'utf8');
    j.close();
    // As if the process died after the table's commit and before the log was emptied, with one more
    // line cut short mid-write.
    writeFileSync(`${path}.log`, log + '["s","b","running",null,1');
    j = new Journal(path, scope);
    try {
      assert.equal(j.get('a')?.outcome?.state, 'completed');
      assert.equal(j.get('b')?.state, 'accepted', 'the torn line was not applied');
      assert.equal(j.outbox().length, 0, 'the delivery mark replayed after the outcome');
      assert.equal(readFileSync(j.logPath, 'utf8'), '');
    } finally {
      j.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a table that cannot be written loses nothing: rows stay readable, the log keeps them, a later checkpoint or start catches up', async () => {
  const dir = tempDir();
  const path = join(dir, 'j.sqlite');
  try {
    let j = new Journal(path, scope);
    const errors: unknown[] = [];
    let failed!: () => void;
    const firstFailure = new Promise<void>((r) => (failed = r));
    j.onCheckpointError = (e) => {
      errors.push(e);
      failed();
    };
    j.db.exec(`CREATE TRIGGER no_room BEFORE INSERT ON calls BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
    const at = new Date().toISOString();
    await Promise.all(Array.from({ length: 600 }, (_, i) => j.accept('r' + i, 'f.x', 'd', at, 'running', at)));
    await j.finish(outcome('r1'), false);
    // The catch-up runs once the journal is quiet; it fails, and says so.
    await alive(firstFailure);
    assert.ok(errors.length >= 1, 'the failed checkpoint was reported');
    assert.match(String(errors[0]), /disk is full/);
    // Past the row bound, writes do not retry the failing checkpoint each time (the retry timer does).
    const before = errors.length;
    await Promise.all(Array.from({ length: 8200 }, (_, i) => j.accept('x' + i, 'f.x', 'd', at)));
    for (let i = 0; i < 5; i++) await j.accept('y' + i, 'f.x', 'd', at);
    assert.ok(errors.length <= before + 1, `${errors.length - before} retries on the write path`);
    assert.equal(j.get('r1')?.outcome?.state, 'completed', 'rows are still read from memory');
    assert.throws(() => j.outbox(), /disk is full/, 'a read that needs the table says why it cannot have it');
    assert.ok(readFileSync(j.logPath, 'utf8').split('\n').filter(Boolean).length >= 601 + 8205, 'the log was not emptied');
    j.close();
    assert.ok(errors.length >= 2, 'the checkpoint at close failed too, and was reported');
    const db = new Database(path);
    db.exec('DROP TRIGGER no_room'); // room again
    db.close();
    j = new Journal(path, scope, 'NORMAL');
    try {
      assert.equal(j.get('r599')?.state, 'running', 'the next start replayed the log');
      assert.equal(j.outbox().map((o) => o.call_id).join(), 'r1');
    } finally {
      j.close();
    }
  } finally {
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

test('ids the table holds are found after a restart and after the id filter is rebuilt; fresh ids are not', async () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'j.sqlite');
    let j = new Journal(path, scope);
    // More ids than the filter's initial size, so it is rebuilt at a checkpoint.
    const ids = Array.from({ length: 70_000 }, (_, i) => `c${i}`);
    const writes: Promise<void>[] = [];
    for (const id of ids) writes.push(j.accept(id, 'f.x', 'd', new Date().toISOString()));
    await Promise.all(writes);
    const filter = (x: Journal) => (x as unknown as { engine: { ids: IdFilter } }).engine.ids;
    const rebuilt = new Promise<void>((r) => (j.onIdFilterRebuilt = r));
    j.checkpoint();
    // Rebuilt in the background once it outgrew its first size (65 536), sized for twice the ids the table
    // holds; until then the full filter answers, and still finds every id.
    for (const id of ['c0', 'c65536', 'c69999']) assert.equal(j.get(id)?.callId, id);
    await alive(rebuilt);
    assert.ok(filter(j).capacity >= 139_000 && filter(j).capacity <= 140_000, `capacity ${filter(j).capacity}`);
    for (const id of ['c0', 'c65536', 'c69999']) {
      assert.equal(j.get(id)?.callId, id);
      await assert.rejects(j.accept(id, 'f.x', 'd', new Date().toISOString()), DuplicateCallError);
    }
    assert.equal(j.get('fresh'), undefined);
    j.close();
    j = new Journal(path, scope);
    assert.equal(filter(j).capacity, 140_000);
    assert.equal(j.get('c12345')?.callId, 'c12345');
    await assert.rejects(j.accept('c54321', 'f.x', 'd', new Date().toISOString()), DuplicateCallError);
    await j.accept('fresh', 'f.x', 'd', new Date().toISOString());
    j.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a write to a row the background catch-up is writing lands in the table too; reads and duplicates see it meanwhile', async () => {
  const dir = tempDir();
  const j = new Journal(join(dir, 'j.sqlite'), scope);
  try {
    const at = new Date().toISOString();
    const caughtUp = new Promise<void>((r) => (j.onBackgroundCheckpoint = r));
    await Promise.all(Array.from({ length: 8192 }, (_, i) => j.accept('k' + i, 'f.x', 'd', at, 'running', at)));
    // The catch-up has frozen these rows and writes them over several turns; these writes come meanwhile.
    await j.finish(outcome('k0'), false);
    await j.setState('k8191', 'awaiting_confirmation');
    await assert.rejects(j.accept('k4000', 'f.x', 'd', at), DuplicateCallError);
    assert.equal(j.get('k0')?.outcome?.state, 'completed');
    await alive(caughtUp);
    assert.equal(readFileSync(j.logPath, 'utf8'), '', 'the log is emptied only once the table has every row');
    const row = (id: string) => j.db.prepare(`SELECT state, outcome IS NOT NULL AS done FROM calls WHERE call_id = ?`).get(id) as { state: string; done: number };
    assert.deepEqual(row('k0'), { state: 'completed', done: 1 });
    assert.deepEqual(row('k8191'), { state: 'awaiting_confirmation', done: 0 });
    assert.equal((j.db.prepare('SELECT count(*) n FROM calls').get() as { n: number }).n, 8192);
  } finally {
    j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('ids that reach the table while the id filter is rebuilt are found once the new filter takes over', async () => {
  const dir = tempDir();
  const j = new Journal(join(dir, 'j.sqlite'), scope);
  try {
    const at = new Date().toISOString();
    const filter = () => (j as unknown as { engine: { ids: IdFilter } }).engine.ids;
    await Promise.all(Array.from({ length: 65_537 }, (_, i) => j.accept(`p${i}`, 'f.x', 'd', at)));
    const rebuilt = new Promise<void>((r) => (j.onIdFilterRebuilt = r));
    j.checkpoint();
    const old = filter();
    await Promise.all(Array.from({ length: 100 }, (_, i) => j.accept(`during${i}`, 'f.x', 'd', at)));
    j.checkpoint();
    assert.equal(filter(), old, 'the rebuild is still under way');
    await alive(rebuilt);
    assert.notEqual(filter(), old);
    for (const id of ['p0', 'p65536', 'during0', 'during99']) {
      assert.ok(filter().mayHave(id), `${id} is in the new filter`);
      await assert.rejects(j.accept(id, 'f.x', 'd', at), DuplicateCallError);
    }
  } finally {
    j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a process killed in the middle of a background catch-up loses nothing and runs nothing twice', async () => {
  const dir = tempDir();
  const path = join(dir, 'j.sqlite');
  try {
    journalThenKill(path, scope, `
      j.onBackgroundCheckpoint = () => { throw new Error('the catch-up was meant to be cut short'); };
      await Promise.all(Array.from({ length: 9000 }, (_, i) => j.accept('z' + i, 'f.x', 'd', at, 'running', at)));
      await j.finish(${JSON.stringify(outcome('z1'))}, false);
      // Some chunks are in the table, not all: wait for the first one, then die.
      const count = j.db.prepare('SELECT count(*) FROM calls').pluck();
      while (count.get() === 0) await new Promise((r) => setImmediate(r));
      if (count.get() >= 9000) throw new Error('the catch-up was not chunked');
    `);
    const j = new Journal(path, scope);
    try {
      assert.equal((j.db.prepare('SELECT count(*) n FROM calls').get() as { n: number }).n, 9000);
      assert.equal(j.get('z1')?.outcome?.state, 'completed');
      await assert.rejects(j.accept('z8999', 'f.x', 'd', new Date().toISOString()), DuplicateCallError);
      const rec = j.recover();
      assert.equal(rec.length, 8999, 'every call that was running is reported interrupted, none re-run');
      assert.ok(rec.every((o) => o.state === 'unknown'));
    } finally {
      j.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
