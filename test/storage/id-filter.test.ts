/** The journal's filter of known call ids: never a false "absent", rarely a false "maybe". */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { IdFilter } from '../../src/storage/id-filter.js';

test('every added id is reported as maybe present; few fresh ids are, at capacity', () => {
  const f = new IdFilter(20_000);
  const added = Array.from({ length: 20_000 }, () => randomUUID());
  for (const id of added) f.add(id);
  for (const id of added) assert.equal(f.mayHave(id), true, id);
  assert.equal(f.full, false);
  let fp = 0;
  for (let i = 0; i < 20_000; i++) if (f.mayHave(randomUUID())) fp++;
  // About 0.25 % expected; 1 % would mean the hashing is broken.
  assert.ok(fp < 200, `false positives: ${fp} of 20000`);
  f.add(randomUUID());
  assert.equal(f.full, true);
});

test('ids that differ in one character, and non-ASCII ids, are told apart', () => {
  const f = new IdFilter(1000);
  f.add('0193aaaa-bbbb-7ccc-8ddd-eeeeffff0000');
  f.add('呼叫-1');
  assert.equal(f.mayHave('呼叫-1'), true);
  let fp = 0;
  for (const c of '123456789abcdef') if (f.mayHave(`0193aaaa-bbbb-7ccc-8ddd-eeeeffff000${c}`)) fp++;
  assert.ok(fp <= 1, `false positives: ${fp}`);
});
