/** `dataVersion` under `watchChanges`: another process's commit is seen at once, without a pragma per turn. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { dataVersion, openDatabase, watchChanges, WATCH_RECHECK_MS } from '../../src/storage/sqlite.js';
import { tempDir } from '../helpers/stack.js';

/** Commits one row from another process (as the CLI does). */
function writeFromAnotherProcess(file: string): void {
  const r = spawnSync(process.execPath, ['-e', `const D = require('better-sqlite3'); const db = new D(${JSON.stringify(file)}); db.prepare("INSERT INTO t (v) VALUES ('x')").run(); db.close();`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

test('a watched database sees another process commit within the event loop turn that follows, not after the recheck interval', async () => {
  const dir = tempDir();
  const file = join(dir, 'w.sqlite');
  const db = openDatabase(file);
  try {
    db.exec('CREATE TABLE t (v TEXT)');
    const stop = watchChanges(db);
    const v0 = dataVersion(db);
    assert.equal(dataVersion(db), v0);
    for (let i = 0; i < 3; i++) {
      const before = dataVersion(db);
      writeFromAnotherProcess(file);
      // Long enough for the file event to arrive, far shorter than the fallback recheck.
      await sleep(20);
      assert.ok(20 * 5 < WATCH_RECHECK_MS);
      assert.notEqual(dataVersion(db), before, `change ${i} was seen`);
    }
    // This connection's own commits do not change data_version, and do not break the watch.
    const own = dataVersion(db);
    db.prepare("INSERT INTO t (v) VALUES ('own')").run();
    await sleep(20);
    assert.equal(dataVersion(db), own);
    stop();
    // Unwatched: the pragma per turn still sees changes.
    writeFromAnotherProcess(file);
    await sleep(1);
    assert.notEqual(dataVersion(db), own);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a database whose files cannot be watched keeps the pragma per turn', () => {
  const db = openDatabase(':memory:');
  try {
    const stop = watchChanges(db);
    const v = dataVersion(db);
    assert.equal(typeof v, 'number');
    stop();
  } finally {
    db.close();
  }
});
