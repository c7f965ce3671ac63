/**
 * The migration runner for PostgreSQL databases (the clustered bridge's store, issue 34). A schema's
 * migrations are SQL files in one folder, one per version, named `NNNN_what.sql` and numbered from 0001
 * without gaps. Each runs in its own transaction together with its row in `schema_version`, so a failure
 * leaves the database at the version before it. Nodes starting at once take turns (an advisory lock), and a
 * database written by a newer build is refused before anything is written to it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { SchemaTooNewError } from './migrations.js';

/** One migration file. */
export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

/** A schema: the name people know it by (and its rows in `schema_version`), and its folder of SQL files. */
export interface PgSchema {
  name: string;
  dir: string;
}

/** A migration failed; its transaction was rolled back and the database is still at `from`. */
export class PgMigrationError extends Error {
  readonly code = 'migration_failed' as const;
  constructor(
    readonly schema: string,
    readonly from: number,
    readonly migration: PgMigration,
    cause: unknown,
  ) {
    super(`the ${schema} database could not be migrated from version ${from} by ${String(migration.version).padStart(4, '0')}_${migration.name}.sql: ${cause instanceof Error ? cause.message : String(cause)}; it is unchanged at version ${from}`, { cause });
    this.name = 'PgMigrationError';
  }
}

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** The migrations in `dir`, in order; throws when a file is misnamed or a version is missing. */
export function readPgMigrations(dir: string): PgMigration[] {
  const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
  return files.map((f, i) => {
    const m = FILE.exec(f);
    if (!m) throw new Error(`${join(dir, f)}: a migration file is named NNNN_what.sql (lower-case letters, digits, _)`);
    const version = Number(m[1]);
    if (version !== i + 1) throw new Error(`${dir}: migrations must be numbered 0001, 0002, …; found ${f} at position ${i + 1}`);
    return { version, name: m[2]!, sql: readFileSync(join(dir, f), 'utf8') };
  });
}

/** The version a database is at for `schema` (0: none applied). */
export async function pgSchemaVersion(q: pg.Pool | pg.PoolClient, schema: string): Promise<number> {
  const r = await q.query<{ v: number | null }>(`SELECT max(version) AS v FROM schema_version WHERE schema = $1`, [schema]);
  return r.rows[0]?.v ?? 0;
}

/**
 * Brings the database to the newest version of `schema` (or `opts.upTo`, for tests that build an older
 * database). Returns the versions applied.
 */
export async function migratePg(pool: pg.Pool, schema: PgSchema, opts: { upTo?: number } = {}): Promise<number[]> {
  const migrations = readPgMigrations(schema.dir);
  const newest = migrations.length;
  const target = Math.min(opts.upTo ?? newest, newest);
  const client = await pool.connect();
  // Checked out, a client's dropped connection is an 'error' event nobody else hears (it would end the
  // process); the statement running fails with the same cause.
  let broken = false;
  const dropped = () => (broken = true);
  client.on('error', dropped);
  const applied: number[] = [];
  try {
    // One node at a time: the others wait here, then find the work done.
    await client.query(`SELECT pg_advisory_lock(hashtext($1))`, [`aios schema ${schema.name}`]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_version (
        schema     text NOT NULL,
        version    integer NOT NULL,
        name       text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (schema, version)
      )`);
      let current = await pgSchemaVersion(client, schema.name);
      if (current > newest) throw new SchemaTooNewError(schema.name, `${client.database ?? 'postgres'} (PostgreSQL)`, current, newest);
      for (const m of migrations) {
        if (m.version <= current || m.version > target) continue;
        try {
          await client.query('BEGIN');
          await client.query(m.sql);
          await client.query(`INSERT INTO schema_version (schema, version, name) VALUES ($1, $2, $3)`, [schema.name, m.version, m.name]);
          await client.query('COMMIT');
        } catch (e) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw new PgMigrationError(schema.name, current, m, e);
        }
        current = m.version;
        applied.push(m.version);
      }
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtext($1))`, [`aios schema ${schema.name}`]).catch(() => undefined);
    }
  } finally {
    client.off('error', dropped);
    client.release(broken);
  }
  return applied;
}
