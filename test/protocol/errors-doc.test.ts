/** docs/errors.md documents exactly the catalogue: same codes, types and retryability. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERRORS } from '../../src/protocol/errors.js';
import { ROOT } from '../helpers/stack.js';

test('every catalogue row is documented with its code and retryability, and nothing else is', () => {
  const md = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
  const rows = [...md.matchAll(/^\| (-41\d{3}) \| `([a-z_]+)` \| ([^|]+) \|/gm)].map((m) => ({ code: Number(m[1]), type: m[2]!, retry: m[3]!.trim() }));
  assert.deepEqual(rows.map((r) => r.type).sort(), Object.keys(ERRORS).sort());
  for (const r of rows) {
    const spec = ERRORS[r.type as keyof typeof ERRORS];
    assert.equal(r.code, spec.code, `${r.type} code`);
    const documented = r.retry.startsWith('yes') ? true : r.retry.startsWith('no') || r.retry.startsWith('handler') ? false : undefined;
    assert.equal(documented, spec.retryable, `${r.type} retryable`);
  }
});
