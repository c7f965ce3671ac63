/**
 * TurnBatch (src/base/turn-batch.ts): the requests of one event-loop turn go to one batch, each caller gets its
 * own answer, a failing batch fails its callers only, and batches run one at a time unless `parallel`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TurnBatch } from '../../src/base/turn-batch.js';

/** A batch runner that records each batch and holds it until `release` is called. */
function heldRunner() {
  const batches: number[][] = [];
  const releases: (() => void)[] = [];
  const run = async (items: number[]) => {
    batches.push(items);
    await new Promise<void>((r) => releases.push(r));
    if (items.includes(-1)) throw new Error('bad batch');
    return items.map((i) => i * 10);
  };
  return { batches, releases, run };
}

const turn = () => new Promise((r) => setImmediate(r));

test('one turn\'s requests go in one batch (at most max), each answered on its own; what comes while it runs waits for it', async () => {
  const h = heldRunner();
  const b = new TurnBatch<number, number>({ run: h.run, max: 3 });
  const first = [1, 2, 3, 4].map((i) => b.add(i));
  await turn();
  assert.deepEqual(h.batches, [[1, 2, 3]]);
  const later = b.add(5);
  await turn();
  assert.deepEqual(h.batches, [[1, 2, 3]], 'one batch at a time');
  h.releases[0]!();
  assert.deepEqual(await Promise.all(first.slice(0, 3)), [10, 20, 30]);
  await turn();
  assert.deepEqual(h.batches, [[1, 2, 3], [4, 5]]);
  h.releases[1]!();
  assert.deepEqual(await Promise.all([first[3], later]), [40, 50]);
});

test('a failing batch fails its own callers, not the next batch\'s; the same key waits for the next batch', async () => {
  const h = heldRunner();
  const b = new TurnBatch<number, number>({ run: h.run, max: 10, key: (i) => String(Math.abs(i)) });
  const bad = [b.add(-1), b.add(2), b.add(1)].map((p) => p.then((v) => v, (e: Error) => e.message));
  await turn();
  assert.deepEqual(h.batches, [[-1, 2]], 'key 1 twice: the second waits');
  h.releases[0]!();
  assert.deepEqual(await Promise.all(bad.slice(0, 2)), ['bad batch', 'bad batch']);
  await turn();
  h.releases[1]!();
  assert.equal(await bad[2], 10);
});

test('parallel: a turn\'s batch starts while an earlier one still runs', async () => {
  const h = heldRunner();
  const b = new TurnBatch<number, number>({ run: h.run, max: 10, parallel: true });
  const one = b.add(1);
  await turn();
  const two = [b.add(2), b.add(3)];
  await turn();
  assert.deepEqual(h.batches, [[1], [2, 3]]);
  h.releases[1]!();
  assert.deepEqual(await Promise.all(two), [20, 30], 'the second batch answered before the first');
  h.releases[0]!();
  assert.equal(await one, 10);
});

test('`key` with `parallel` is refused: parallel batches could not keep one key\'s items apart', () => {
  assert.throws(() => new TurnBatch<number, number>({ run: async (xs) => xs, max: 10, parallel: true, key: String }), /one batch at a time/);
});
