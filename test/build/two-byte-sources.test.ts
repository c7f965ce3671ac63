/**
 * The agent's bundle refuses a chunk holding a character above U+00FF (scripts/build-agent-bundle.mjs): V8
 * would keep that whole script as two-byte text, doubling its share of the heap at rest.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: a plain JavaScript build script without declarations.
import { refuseTwoByteSources } from '../../scripts/build-agent-bundle.mjs';

test('a chunk with a character above U+00FF is refused, naming its file and line; Latin-1 and escapes pass', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aios-two-byte-'));
  try {
    writeFileSync(join(dir, 'ok.js'), 'const a = "caf\u00e9 \\u4e2d";\nconst b = /[\\u3002]/;\n');
    writeFileSync(join(dir, 'notes.txt'), '中文 is not JavaScript\n');
    assert.doesNotThrow(() => refuseTwoByteSources(dir));
    writeFileSync(join(dir, 'bad.js'), 'const x = 1;\nconst re = /[。！]/;\n');
    assert.throws(() => refuseTwoByteSources(dir), /bad\.js:2/);
    writeFileSync(join(dir, 'bad.js'), 'const face = "\u{1F600}";\n');
    assert.throws(() => refuseTwoByteSources(dir), /bad\.js:1/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
