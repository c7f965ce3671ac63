/**
 * bench/idle-rss.ts end to end at a small scale: both agents start, answer calls through the bridge's
 * HTTP API (`--after-calls`) and are measured before and after them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { measureIdleRss } from '../../bench/idle-rss.js';
import { slow } from '../helpers/wait.js';

test('bench:idle-rss measures both agents at rest, their start-up time, and again after calls', { timeout: slow(180_000) }, async () => {
  const samples = await measureIdleRss({ afterS: 1, afterCalls: 20 });
  assert.deepEqual(samples.map((s) => s.config), ['minimal', 'demo']);
  for (const s of samples) {
    assert.ok(s.rssMb > 10 && s.readyMs > 0, JSON.stringify(s));
    assert.ok(s.rssAfterCallsMb !== undefined && s.rssAfterCallsMb > 10, JSON.stringify(s));
  }
});
