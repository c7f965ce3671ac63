/**
 * The one migration runner for every SQLite database in the project (the agent's journal, the consent
 * database, the bridge's call store, the bridge's login store). A database's schema version is its
 * `PRAGMA user_version`; its migrations are numbered from 1 and each runs in its own transaction
 * together with the version bump, so a crash in the middle of one leaves the database at the version
 * before it. A database written by a newer build is refused with `SchemaTooNewError` before anything
 * is written to it.
 */
import type Database from 'better-sqlite3';
import { coreMessage } from '../i18n/index.js';
import { SaidError } from '../i18n/said.js';

/** One schema step; `up` runs inside a transaction. Never edit a published migration: add a new one. */
export interface Migration {
  version: number;
  name: string;
  up(db: Database.Database): void;
}

/** A database's schema: the name people know it by (in errors) and its migrations. */
export interface Schema {
  /** E.g. "journal", "consent": said in errors, so a person knows which file is meant. */
  name: string;
  migrations: readonly Migration[];
  /**
   * For a database that kept its version elsewhere before this runner (user_version 0): the version it
   * is at, read from its old bookkeeping; 0 when it has none.
   */
  legacyVersion?(db: Database.Database): number;
}

/** A stable code for local faults of this module (STYLE.md: local faults carry a string code). */
export type MigrationFaultCode = 'schema_too_new' | 'migration_failed';

/**
 * The database was written by a newer build (its schema version is above every migration this build
 * knows). Nothing was changed: upgrading the program is the way forward, downgrading the file is not.
 */
export class SchemaTooNewError extends SaidError {
  readonly code: MigrationFaultCode = 'schema_too_new';
  constructor(
    readonly schema: string,
    readonly file: string,
    readonly found: number,
    readonly supported: number,
  ) {
    super(coreMessage('core.storage.too_new', { schema, file, found, supported }));
    this.name = 'SchemaTooNewError';
  }
}

/** A migration threw; its transaction was rolled back and the database is still at `from`. */
export class MigrationError extends Error {
  readonly code: MigrationFaultCode = 'migration_failed';
  constructor(
    readonly schema: string,
    readonly from: number,
    readonly migration: Migration,
    cause: unknown,
  ) {
    super(`the ${schema} database could not be migrated from version ${from} by migration ${migration.version} (${migration.name}): ${cause instanceof Error ? cause.message : String(cause)}; it is unchanged at version ${from}`, { cause });
    this.name = 'MigrationError';
  }
}

/** The schema version a database is at (`PRAGMA user_version`). */
export function schemaVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Brings `db` to the newest version of `schema` (or to `opts.upTo`, for tests that build an older
 * database), applying each missing migration in order, each in its own transaction. Returns the
 * versions applied. Throws `SchemaTooNewError` for a database from a newer build, `MigrationError` when a
 * migration fails (the database then stays at the last version that committed).
 */
export function migrate(db: Database.Database, schema: Schema, opts: { upTo?: number } = {}): number[] {
  const sorted = [...schema.migrations].sort((a, b) => a.version - b.version);
  sorted.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`the ${schema.name} migrations must be numbered 1, 2, 3…; found ${m.version} at position ${i + 1}`);
  });
  const newest = sorted.length;
  let current = schemaVersion(db);
  if (current > newest) throw new SchemaTooNewError(schema.name, db.name, current, newest);
  if (current === 0 && schema.legacyVersion) {
    const legacy = schema.legacyVersion(db);
    if (legacy > newest) throw new SchemaTooNewError(schema.name, db.name, legacy, newest);
    current = legacy;
  }
  const target = Math.min(opts.upTo ?? newest, newest);
  const applied: number[] = [];
  for (const m of sorted) {
    if (m.version <= current || m.version > target) continue;
    const from = current;
    try {
      db.transaction(() => {
        m.up(db);
        db.pragma(`user_version = ${m.version}`);
      })();
    } catch (e) {
      throw new MigrationError(schema.name, from, m, e);
    }
    current = m.version;
    applied.push(m.version);
  }
  // An adopted legacy database already at the target records its version here.
  if (schemaVersion(db) !== current) db.pragma(`user_version = ${current}`);
  return applied;
}
