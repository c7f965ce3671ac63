/** `dataVersion` under `watchChanges`: another connection's commit is seen at once, without a pragma per turn. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { dataVersion, openDatabase, statement, watchChanges, WATCH_RECHECK_MS } from '../../src/storage/sqlite.js';
import { tempDir } from '../helpers/stack.js';

test('a watched database skips the pragma while nothing changes, and sees another connection\'s commit from its file event', async () => {
  const dir = tempDir();
  const file = join(dir, 'w.sqlite');
  const db = openDatabase(file);
  const other = openDatabase(file);
  try {
    db.exec('CREATE TABLE t (v TEXT)');
    // Count the pragmas `dataVersion` runs (its statement is the cached one).
    const st = statement(db, 'PRAGMA data_version');
    const get = st.get.bind(st);
    const pragmas: number[] = [];
    st.get = ((...a: unknown[]) => (pragmas.push(performance.now()), get(...(a as [])))) as typeof st.get;
    const stop = watchChanges(db);
    dataVersion(db);
    const quiet = pragmas.length;
    for (let i = 0; i < 5; i++) {
      dataVersion(db);
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(pragmas.length, quiet, 'no pragma per turn while the files are unchanged');
    for (let i = 0; i < 3; i++) {
      const before = dataVersion(db);
      const last = pragmas.at(-1)!;
      other.prepare("INSERT INTO t (v) VALUES ('x')").run();
      let seenAt = 0;
      for (let k = 0; k < 40 && !seenAt; k++) {
        await sleep(5);
        if (dataVersion(db) !== before) seenAt = performance.now();
      }
      assert.ok(seenAt, `change ${i} was seen`);
      // Seen before the fallback recheck could have run: the file event did it.
      if (seenAt - last < WATCH_RECHECK_MS) continue;
      assert.fail(`change ${i} was seen only after ${Math.round(seenAt - last)} ms (the fallback recheck)`);
    }
    // This connection's own commits do not change data_version, and do not break the watch.
    const own = dataVersion(db);
    db.prepare("INSERT INTO t (v) VALUES ('own')").run();
    // A "nothing happens within 20 ms" check: the file event of the own commit arrives in that time (the
    // other connection's did, above), and it must not move data_version.
    await sleep(20);
    assert.equal(dataVersion(db), own);
    stop();
    // Unwatched: the pragma per turn still sees changes.
    other.prepare("INSERT INTO t (v) VALUES ('y')").run();
    assert.notEqual(dataVersion(db), own);
  } finally {
    other.close();
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
