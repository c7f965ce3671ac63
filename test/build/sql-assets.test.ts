/**
 * The SQL migration files ship with the build: scripts/copy-assets.mjs (run by `npm run build` and
 * scripts/build-electron.mjs) copies them to the same place under the output folder, where the compiled
 * store (dist/src/bridge/store/pg-store.js) looks for them beside itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { BRIDGE_PG_SCHEMA } from '../../src/bridge/store/pg-store.js';
import { readPgMigrations } from '../../src/storage/pg-migrate.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const copier = (await import(join(ROOT, 'scripts', 'copy-assets.mjs'))) as { copyAssets(o: { out: string }): string[] };

test('every PostgreSQL migration file is copied to the build, beside where the compiled store looks', () => {
  const out = mkdtempSync(join(tmpdir(), 'aios-assets-'));
  try {
    const copied = copier.copyAssets({ out });
    const dir = relative(ROOT, BRIDGE_PG_SCHEMA.dir);
    assert.equal(dir, join('src', 'bridge', 'store', 'pg-migrations'), 'the store reads its migrations beside its own module');
    const files = readPgMigrations(BRIDGE_PG_SCHEMA.dir).map((m) => `${String(m.version).padStart(4, '0')}_${m.name}.sql`);
    assert.ok(files.length >= 1);
    for (const f of files) {
      assert.ok(copied.includes(join(dir, f)), `${f} is copied`);
      assert.equal(readFileSync(join(out, dir, f), 'utf8'), readFileSync(join(BRIDGE_PG_SCHEMA.dir, f), 'utf8'));
    }
    // What the compiled store reads: the same files, in the same order.
    assert.deepEqual(readPgMigrations(join(out, dir)), readPgMigrations(BRIDGE_PG_SCHEMA.dir));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
