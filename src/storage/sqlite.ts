/**
 * Opening SQLite databases the same way everywhere: WAL, a busy timeout, private files. Their schemas
 * move forward through the one migration runner, `migrations.ts`.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import { privateFile } from './private-dir.js';

/** `synchronous` levels we allow. */
export type SyncLevel = 'NORMAL' | 'FULL';

/**
 * Opens (creating the folder) with WAL and the given synchronous level. `exclusive` keeps the file
 * locked for this connection's lifetime: no shared-memory index to lock per commit (cheaper commits),
 * and a second process opening the same file fails instead of sharing it.
 */
export function openDatabase(path: string, sync: SyncLevel = 'NORMAL', exclusive = false): Database.Database {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // Every database here holds call data, tokens or keys: 0600, whatever the umask. SQLite gives its
    // -wal and -shm files the main file's mode; side files of an older, looser install are fixed too.
    privateFile(path);
    for (const side of [`${path}-wal`, `${path}-shm`, `${path}-journal`]) if (existsSync(side)) privateFile(side);
  }
  const db = new Database(path, { timeout: exclusive ? 1000 : 5000 });
  if (exclusive) db.pragma('locking_mode = EXCLUSIVE');
  try {
    db.pragma('journal_mode = WAL');
  } catch (e) {
    db.close();
    throw e;
  }
  db.pragma(`synchronous = ${sync}`);
  db.pragma('foreign_keys = ON');
  return db;
}

const statements = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/** A prepared statement cached per connection: hot paths prepare once, not per call. */
export function statement(db: Database.Database, sql: string): Database.Statement {
  let m = statements.get(db);
  if (!m) {
    m = new Map();
    statements.set(db, m);
  }
  let st = m.get(sql);
  if (!st) {
    st = db.prepare(sql);
    m.set(sql, st);
  }
  return st;
}

/**
 * A number that changes whenever another connection (another process, e.g. the CLI) commits to the
 * database; lets a reader keep a cache and still see those changes on its next read.
 *
 * Reading it is a `PRAGMA data_version`: a read transaction, so two `fcntl` locks. A database under
 * `watchChanges` skips the pragma until its files change; other databases read it at most once per
 * event-loop turn.
 */
export function dataVersion(db: Database.Database): number {
  const w = watches.get(db);
  if (w) {
    // A monotonic clock: a wall clock set back would stretch the recheck interval by as much.
    const now = performance.now();
    if (!w.stale && now - w.checkedAt < WATCH_RECHECK_MS) return w.version;
    w.stale = false;
    w.checkedAt = now;
    w.version = statement(db, 'PRAGMA data_version').pluck().get() as number;
    return w.version;
  }
  // Read at most once per event-loop turn: several checks during one call cost one pragma.
  const known = versions.get(db);
  if (known !== undefined) return known;
  const v = statement(db, 'PRAGMA data_version').pluck().get() as number;
  versions.set(db, v);
  setImmediate(() => versions.delete(db));
  return v;
}

const versions = new WeakMap<Database.Database, number>();

/** Under a watch, `dataVersion` reads the pragma again at least this often even if no change was seen. */
export const WATCH_RECHECK_MS = 250;

interface ChangeWatch {
  stale: boolean;
  checkedAt: number;
  version: number;
  watchers: FSWatcher[];
}
const watches = new WeakMap<Database.Database, ChangeWatch>();

/**
 * For a long-lived connection to a WAL database that other processes write (the agent's consent
 * database, written by the CLI): `dataVersion` answers from memory until the database or its WAL file
 * changes (inotify, FSEvents, ReadDirectoryChangesW) — another process's commit writes the WAL first —
 * and reads the pragma again at least every WATCH_RECHECK_MS anyway, so a missed event delays a change
 * by that much at most. Where the files cannot be watched, nothing changes (the pragma per turn).
 * Returns the function that ends the watch; call it before closing the connection.
 */
export function watchChanges(db: Database.Database): () => void {
  const w: ChangeWatch = { stale: true, checkedAt: -Infinity, version: 0, watchers: [] };
  const stop = () => {
    for (const x of w.watchers) x.close();
    w.watchers = [];
    watches.delete(db);
  };
  const onChange = (event: string) => {
    w.stale = true;
    // A renamed or replaced file is watched no more: fall back to the pragma per turn.
    if (event === 'rename') stop();
  };
  try {
    for (const file of [db.name, `${db.name}-wal`]) {
      const x = watch(file, { persistent: false }, onChange);
      x.on('error', () => stop());
      w.watchers.push(x);
    }
  } catch {
    stop();
    return () => undefined;
  }
  watches.set(db, w);
  return stop;
}
