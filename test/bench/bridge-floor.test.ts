/**
 * The full path's floor (bench/bridge-floor.ts): the same runtime client through a minimal bridge to a real
 * agent. Its `sqlite` variant must keep what it claims to keep: every call's record, inserted before the call
 * is forwarded and updated with the agent's outcome before the answer (a floor that skipped a commit would
 * measure too low). No timing assertions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { openBridgeFloor } from '../../bench/bridge-floor.js';
import { slow } from '../helpers/wait.js';

const settings = { synchronous: 'normal', log: 'silent' } as const;

test('the floor with its two commits: every call answered completed, its record committed with the agent\'s outcome', { timeout: slow(120_000) }, async () => {
  const t = await openBridgeFloor(settings, 4, 'sqlite', 480);
  try {
    await Promise.all(Array.from({ length: 12 }, () => t.call()));
    const db = new Database(t.dbFile, { readonly: true });
    try {
      const rows = db.prepare('SELECT state, outcome FROM calls').all() as { state: string; outcome: string | null }[];
      assert.equal(rows.length, 12);
      for (const r of rows) {
        assert.equal(r.state, 'completed');
        assert.equal((JSON.parse(r.outcome ?? 'null') as { output?: { value?: string } } | null)?.output?.value, 'hello from the benchmark');
      }
    } finally {
      db.close();
    }
  } finally {
    await t.close();
  }
});

test('the floor without storage writes no database; the HTTP echo answers with no agent', { timeout: slow(120_000) }, async () => {
  for (const variant of ['none', 'echo'] as const) {
    const t = await openBridgeFloor(settings, 2, variant, 480);
    try {
      await Promise.all(Array.from({ length: 4 }, () => t.call()));
      assert.equal(existsSync(t.dbFile), false, variant);
    } finally {
      await t.close();
    }
  }
});
