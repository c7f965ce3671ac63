/** Atomic JSON files: exact mode, concurrent writers never share a temp file, nothing left behind. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeJsonFile, writeJsonFileSync } from '../../src/base/json-file.js';
import { tempDir } from '../helpers/stack.js';

test('concurrent writes each land whole; the mode is exact; no temp file remains', async () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'state.json');
    const old = process.umask(0o077);
    try {
      await Promise.all(Array.from({ length: 20 }, (_, i) => writeJsonFile(file, { writer: i, pad: 'x'.repeat(10_000) }, 0o644)));
    } finally {
      process.umask(old);
    }
    const v = JSON.parse(readFileSync(file, 'utf8')) as { writer: number };
    assert.ok(v.writer >= 0 && v.writer < 20, 'one whole write won');
    assert.equal(statSync(file).mode & 0o777, 0o644, 'exact despite a narrower umask');
    writeJsonFileSync(file, { sync: true }, 0o600);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { sync: true });
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir), ['state.json']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
