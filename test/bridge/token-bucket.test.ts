/** The bridge's one token bucket (src/bridge/token-bucket.ts), on an explicit clock. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenBucket } from '../../src/bridge/token-bucket.js';
import { RateLimiter } from '../../src/bridge/http-util.js';

test('a bucket allows its burst, then one token per 1/rate seconds, and says how long to wait', () => {
  const b = new TokenBucket(2, 3, 0);
  assert.deepEqual([b.take(0), b.take(0), b.take(0)], [0, 0, 0], 'the burst');
  assert.equal(b.take(0), 500, 'the fourth waits half a second at 2/s');
  assert.equal(b.take(499), 2, 'almost one token');
  assert.equal(b.take(500), 0, 'one token after 500 ms');
  assert.equal(b.take(10_000), 0);
  assert.equal(b.take(10_000), 0);
  assert.equal(b.take(10_000), 0, 'refilled to the burst, not beyond');
  assert.ok(b.take(10_000) > 0);
  assert.ok(b.take(5_000) > 0, 'a clock going backwards adds nothing');
});

test('the rate limiter keeps one bucket per key', () => {
  const r = new RateLimiter(1, 1);
  assert.equal(r.take('a', 0), 0);
  assert.equal(r.take('a', 0), 1000);
  assert.equal(r.take('b', 0), 0, 'another key has its own bucket');
});
