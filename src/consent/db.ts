/**
 * The consent database (`<data_dir>/consent.sqlite`): remembered decisions, the paused flag and the
 * audit trail. Opened by the running agent and by the CLI at the same time, so it runs in WAL mode with
 * a busy timeout, and its schema only moves forward through the numbered migrations below.
 */
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { openDatabase } from '../storage/sqlite.js';
import { migrate, type Migration, type Schema } from '../storage/migrations.js';

/** An open better-sqlite3 connection. */
export type Db = Database.Database;

/** The database file name inside the data directory. */
export const CONSENT_DB_FILE = 'consent.sqlite';

/**
 * Numbered schema migrations. Never edit a shipped migration: append a new one (and its test in
 * test/consent/migrations.test.ts, which migrates a database that holds rows).
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'decisions, settings and audit',
    up: (db) => db.exec(`
  CREATE TABLE decisions (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    function_id TEXT NOT NULL,
    resource TEXT NOT NULL,
    effect TEXT NOT NULL CHECK (effect IN ('allow', 'deny')),
    scope TEXT NOT NULL CHECK (scope IN ('session', 'always')),
    session_id TEXT,
    created_at TEXT NOT NULL
  );
  CREATE INDEX decisions_lookup ON decisions (user_id, function_id, resource);
  CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  CREATE TABLE audit (
    id INTEGER PRIMARY KEY,
    call_id TEXT NOT NULL,
    function_id TEXT NOT NULL,
    requester_kind TEXT,
    requester_id TEXT,
    requester_name TEXT,
    workspace_id TEXT,
    user_id TEXT,
    args_summary TEXT,
    decision TEXT,
    decided_by TEXT,
    remembered INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL,
    error_type TEXT,
    duration_ms INTEGER,
    accepted_at TEXT,
    finished_at TEXT NOT NULL
  );
  CREATE INDEX audit_finished ON audit (finished_at);
  CREATE INDEX audit_function ON audit (function_id, finished_at);
  `),
  },
  {
    version: 2,
    name: 'audit rows name the resources a call touched',
    // JSON array of `{ kind, label }` (a grant's alias, else the id), as the prompt showed them.
    up: (db) => db.exec(`ALTER TABLE audit ADD COLUMN resources TEXT`),
  },
  {
    version: 3,
    name: 'forget remembered allows for any resource recorded before prompts named their resources',
    // Before resources were checked ahead of consent, a prompt for a call outside every share could store
    // `allow <function> *` and later calls into any share ran unasked. Such rows cannot be told apart from
    // a deliberate choice, so they go: the user is asked once more. Denies stay.
    up: (db) => db.exec(`DELETE FROM decisions WHERE resource = '*' AND effect = 'allow'`),
  },
  {
    version: 4,
    name: 'audit rows name the runtime the bridge attests (protocol 1.2 §6.1)',
    // Null for calls from a 1.0/1.1 bridge (an unverified runtime) and for rows written before.
    up: (db) => db.exec(`ALTER TABLE audit ADD COLUMN runtime_id TEXT; ALTER TABLE audit ADD COLUMN runtime_name TEXT;`),
  },
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** The consent database's schema, for the migration runner. */
export const CONSENT_SCHEMA: Schema = { name: 'consent', migrations: MIGRATIONS };

/**
 * Opens (creating if needed) `<dataDir>/consent.sqlite` (0600, WAL) and migrates it, by default to the
 * current schema; a database from a newer build is refused.
 */
export function openConsentDb(dataDir: string, opts: { upTo?: number } = {}): Db {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, CONSENT_DB_FILE);
  const existed = fs.existsSync(file);
  const db = openDatabase(file);
  if (!existed) fs.chmodSync(file, 0o600);
  try {
    migrate(db, CONSENT_SCHEMA, opts);
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}
