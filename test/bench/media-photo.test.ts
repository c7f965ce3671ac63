/** The media photo bench runs end to end with one round and reports positive numbers (no timing assertions). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { benchMediaPhoto } from '../../bench/media-photo.js';
import { slow } from '../helpers/wait.js';

test('media photo bench: one round through the handler and ffmpeg alone gives a ratio', { timeout: slow(120_000) }, async () => {
  const r = await benchMediaPhoto(1);
  for (const v of [r.handlerMs, r.ffmpegMs, r.ratio]) assert.ok(Number.isFinite(v) && v > 0, String(v));
  assert.equal(r.rounds, 1);
});
