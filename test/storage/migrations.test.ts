/**
 * The one migration runner (src/storage/migrations.ts) over every schema in the project: for each
 * migration of each schema, a database at the version before it, holding rows, is migrated by a
 * migration that fails at its very end (as a crash before the commit would): it is left exactly as it
 * was, at the old version; a real process killed in the middle of a migration leaves the same; a
 * database from a newer build is refused with a typed error and not changed. What each migration does
 * to the rows is tested beside its schema (journal-migrations, bridge-store, consent/migrations,
 * login/oauth-migrations).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { migrate, MigrationError, schemaVersion, SchemaTooNewError, type Schema } from '../../src/storage/migrations.js';
import { JOURNAL_SCHEMA } from '../../src/storage/journal-table.js';
import { CONSENT_SCHEMA } from '../../src/consent/db.js';
import { BRIDGE_SCHEMA } from '../../src/bridge/store.js';
import { OAUTH_SCHEMA } from '../../src/bridge/oauth/oauth-store.js';
import { tempDir } from '../helpers/stack.js';

/** Rows of each schema at each version, as that version's code wrote them. */
const SEEDS: Record<string, (db: Database.Database, version: number) => void> = {
  journal(db, v) {
    if (v === 0) return db.exec(`CREATE TABLE unrelated (x TEXT, y TEXT); INSERT INTO unrelated VALUES ('kept', 'too')`);
    db.exec(`INSERT INTO calls (workspace_id, device_id, call_id, function, args_digest, state, outcome, delivered, created_ms, updated_ms)
      VALUES ('ws', 'dev', 'c${v}', 'f.x', 'd', 'completed', '{"call_id":"c${v}"}', 1, ${v}, ${v}), ('ws', 'dev', 'r${v}', 'f.x', 'd', 'running', NULL, 0, ${v}, ${v});
      INSERT INTO meta (key, value) VALUES ('k${v}', 'v');`);
  },
  consent(db, v) {
    if (v === 0) return db.exec(`CREATE TABLE unrelated (x TEXT, y TEXT); INSERT INTO unrelated VALUES ('kept', 'too')`);
    db.exec(`INSERT INTO decisions (user_id, function_id, resource, effect, scope, created_at) VALUES
        ('u', 'files.write_text', '*', 'allow', 'always', 't'), ('u', 'camera.capture', '*', 'deny', 'always', 't'), ('u', 'files.read_text', 'files:/srv', 'allow', 'always', 't');
      INSERT INTO settings (key, value) VALUES ('paused${v}', '0');
      INSERT INTO audit (call_id, function_id, state, finished_at) VALUES ('c${v}', 'files.read_text', 'completed', 't');`);
  },
  'bridge call store'(db, v) {
    if (v === 0) return db.exec(`CREATE TABLE unrelated (x TEXT, y TEXT); INSERT INTO unrelated VALUES ('kept', 'too')`);
    db.exec(`INSERT INTO bridge_calls (workspace_id, call_id, device_id, function, args_digest, params, state, timeline, deadline_ms, created_at, updated_at)
        VALUES ('ws', 'c${v}', 'dev', 'f.x', 'd', '{}', 'running', '[]', 0, 't', 't');
      INSERT INTO bridge_devices (device_id, workspace_id, user_id) VALUES ('dev${v}', 'ws', 'u');`);
  },
  'bridge login'(db, v) {
    if (v === 0) return db.exec(`CREATE TABLE unrelated (x TEXT, y TEXT); INSERT INTO unrelated VALUES ('kept', 'too')`);
    db.exec(`INSERT INTO oauth_users (id, name, password_hash) VALUES ('u${v}', 'n${v}', 'h');
      INSERT INTO oauth_memberships (user_id, workspace_id) VALUES ('u${v}', 'w');
      INSERT INTO oauth_devices (id, user_id, workspace_id, name, platform, client_version, public_jwk, jwk_thumbprint, approved_at)
        VALUES ('d${v}', 'u${v}', 'w', 'n', 'p', '1.0.0', '{}', 't', 1);
      INSERT INTO oauth_tokens (token_hash, kind, device_id, family_id, expires_at, created_at) VALUES ('h${v}', 'refresh', 'd${v}', 'f', 9, 1);`);
  },
};

const SCHEMAS: Schema[] = [JOURNAL_SCHEMA, CONSENT_SCHEMA, BRIDGE_SCHEMA, OAUTH_SCHEMA];

/** Everything a database holds that a migration could change: the schema, the version, every row. */
function dump(db: Database.Database): unknown {
  const objects = db.prepare(`SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`).all() as { type: string; name: string }[];
  const rows = Object.fromEntries(objects.filter((o) => o.type === 'table').map((t) => [t.name, db.prepare(`SELECT * FROM "${t.name}" ORDER BY 1, 2`).all()]));
  return { version: schemaVersion(db), objects, rows };
}

/** A database at `version` of `schema` (every migration up to it applied), holding rows of each version on the way. */
function databaseAt(path: string, schema: Schema, version: number): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  SEEDS[schema.name]!(db, 0);
  for (let v = 1; v <= version; v++) {
    migrate(db, schema, { upTo: v });
    SEEDS[schema.name]!(db, v);
  }
  return db;
}

test('every schema is known to this test and numbered 1, 2, 3… (the runner refuses gaps)', () => {
  assert.deepEqual(SCHEMAS.map((s) => s.name).sort(), Object.keys(SEEDS).sort());
  const db = new Database(':memory:');
  try {
    const gap = { name: 'gappy', migrations: [{ version: 1, name: 'a', up: () => undefined }, { version: 3, name: 'c', up: () => undefined }] };
    assert.throws(() => migrate(db, gap), /numbered 1, 2, 3/);
    assert.equal(schemaVersion(db), 0);
  } finally {
    db.close();
  }
});

for (const schema of SCHEMAS) {
  for (const m of schema.migrations) {
    test(`${schema.name} migration ${m.version} (${m.name}): failing at its end leaves the database at version ${m.version - 1}, rows and schema unchanged; then it applies`, () => {
      const dir = tempDir();
      try {
        const path = join(dir, 'db.sqlite');
        const db = databaseAt(path, schema, m.version - 1);
        const before = dump(db);
        const failing: Schema = { ...schema, migrations: schema.migrations.map((x) => (x === m ? { ...x, up: (d: Database.Database) => (x.up(d), fail()) } : x)) };
        const err = (() => {
          try {
            migrate(db, failing, { upTo: m.version });
          } catch (e) {
            return e;
          }
          return undefined;
        })();
        assert.ok(err instanceof MigrationError, String(err));
        assert.equal(err.code, 'migration_failed');
        assert.equal(err.from, m.version - 1);
        assert.match(err.message, new RegExp(`unchanged at version ${m.version - 1}`));
        assert.deepEqual(dump(db), before);
        db.close();
        // Reopened, as after a restart: the same, and the real migration now applies.
        const again = new Database(path);
        assert.deepEqual(dump(again), before);
        assert.deepEqual(migrate(again, schema, { upTo: m.version }), [m.version]);
        assert.equal(schemaVersion(again), m.version);
        again.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  test(`${schema.name}: a database from a newer build is refused with SchemaTooNewError and not changed`, () => {
    const dir = tempDir();
    try {
      const path = join(dir, 'db.sqlite');
      const newest = schema.migrations.length;
      const db = databaseAt(path, schema, newest);
      db.pragma(`user_version = ${newest + 1}`);
      const before = dump(db);
      assert.throws(() => migrate(db, schema), (e: unknown) => {
        assert.ok(e instanceof SchemaTooNewError);
        assert.equal(e.code, 'schema_too_new');
        assert.equal(e.found, newest + 1);
        assert.equal(e.supported, newest);
        assert.match(e.message, new RegExp(`the ${schema.name} database .* newer than this program understands \\(${newest}\\); upgrade the program`));
        return true;
      });
      assert.deepEqual(dump(db), before);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

function fail(): never {
  throw new Error('cut short before its commit');
}

test('a process killed in the middle of a migration leaves the database at the old version, rows intact', () => {
  const dir = tempDir();
  try {
    const path = join(dir, 'db.sqlite');
    for (const schema of SCHEMAS) {
      const file = join(dir, `${schema.name.replace(/ /g, '-')}.sqlite`);
      const last = schema.migrations.length;
      const db = databaseAt(file, schema, last - 1);
      const before = dump(db);
      db.close();
      // The last migration runs in a real process, which is killed after its work and before its commit.
      const mod = { journal: 'storage/journal-table.ts', consent: 'consent/db.ts', 'bridge call store': 'bridge/store.ts', 'bridge login': 'bridge/oauth/oauth-store.ts' }[schema.name]!;
      const name = { journal: 'JOURNAL_SCHEMA', consent: 'CONSENT_SCHEMA', 'bridge call store': 'BRIDGE_SCHEMA', 'bridge login': 'OAUTH_SCHEMA' }[schema.name]!;
      const script = `
        import Database from 'better-sqlite3';
        import { migrate } from ${JSON.stringify(new URL('../../src/storage/migrations.ts', import.meta.url).href)};
        import { ${name} as s } from ${JSON.stringify(new URL(`../../src/${mod}`, import.meta.url).href)};
        const db = new Database(${JSON.stringify(file)});
        const last = s.migrations.at(-1);
        migrate(db, { ...s, migrations: s.migrations.map((m) => m === last ? { ...m, up: (d) => { m.up(d); process.kill(process.pid, 'SIGKILL'); } } : m) });
      `;
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 });
      assert.equal(r.signal, 'SIGKILL', `${schema.name}: ${r.stderr}`);
      const after = new Database(file);
      assert.deepEqual(dump(after), before, `${schema.name}: unchanged after the crash`);
      assert.deepEqual(migrate(after, schema), [last]);
      after.close();
    }
    rmSync(path, { force: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
