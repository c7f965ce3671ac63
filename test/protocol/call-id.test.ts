/** Call ids minted by the bridge: valid, distinct UUIDv7s carrying the time they were made. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validate, version } from 'uuid';
import { newCallId } from '../../src/protocol/call-id.js';
import { uuidv7Time } from '../../src/protocol/outcomes.js';

test('new call ids are distinct UUIDv7s, across several refills of the random pool, with their minting time', () => {
  const before = Date.now();
  const ids = Array.from({ length: 5000 }, () => newCallId());
  const after = Date.now();
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) {
    assert.ok(validate(id), id);
    assert.equal(version(id), 7);
    const t = uuidv7Time(id)!;
    assert.ok(t >= before && t <= after, `${id}: ${t} outside ${before}..${after}`);
  }
  // The random part differs between consecutive ids (the pool advances).
  assert.notEqual(ids[0]!.slice(19), ids[1]!.slice(19));
});
