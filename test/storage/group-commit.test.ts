/**
 * GroupCommit (issue 32 item 2): the one group-commit unit under the journal log, the audit log and the
 * bridge's call writes. Writes of one turn go in one batch, in order; a writer hears only once its batch
 * is committed; a failed batch fails every writer in it (and no other); close commits what is queued;
 * no write is lost or committed twice, whatever the turns, flushes and batch bound.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GroupCommit, type GroupCommitOptions } from '../../src/storage/group-commit.js';
import { alive, slow } from '../helpers/wait.js';

/** A GroupCommit over an in-memory "disk": `committed` holds each batch as it was committed. */
function unit(opts: Partial<GroupCommitOptions<number>> = {}) {
  const committed: number[][] = [];
  let failNext = 0;
  const g = new GroupCommit<number>({
    commit(batch) {
      if (failNext > 0) {
        failNext--;
        throw new Error('disk full');
      }
      committed.push([...batch]);
    },
    ...opts,
  });
  return { g, committed, failNext: (n = 1) => (failNext = n), all: () => committed.flat() };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

test('writes of one turn are committed as one batch, in the order they were queued, and each writer hears after', async () => {
  const { g, committed } = unit();
  const heard: number[] = [];
  const ps = [1, 2, 3].map((n) => g.write(n).then(() => {
    // Told only once its batch is in: the batch holding it was committed before.
    assert.ok(committed.some((b) => b.includes(n)), `write ${n} heard before its commit`);
    heard.push(n);
  }));
  assert.deepEqual(committed, [], 'nothing is committed in the turn the writes were queued');
  assert.equal(g.pending, true);
  await Promise.all(ps);
  assert.deepEqual(committed, [[1, 2, 3]]);
  assert.deepEqual(heard, [1, 2, 3]);
  assert.equal(g.pending, false);
  // A later turn's writes are a batch of their own.
  await g.write(4);
  assert.deepEqual(committed, [[1, 2, 3], [4]]);
});

test('a batch is at most maxBatch writes; the rest follow in order, each batch its own commit', async () => {
  const { g, committed, all } = unit({ maxBatch: 2 });
  await Promise.all([1, 2, 3, 4, 5].map((n) => g.write(n)));
  assert.deepEqual(committed, [[1, 2], [3, 4], [5]]);
  assert.deepEqual(all(), [1, 2, 3, 4, 5]);
});

test('timing: "task" commits at the end of the current task, before the turn ends; a delay waits for it', async () => {
  const task = unit({ timing: () => 'task' });
  let turnEnded = false;
  setImmediate(() => (turnEnded = true));
  await task.g.write(1);
  assert.equal(turnEnded, false, 'a "task" write waits for no turn');
  assert.deepEqual(task.committed, [[1]]);

  const delayed = unit({ timing: () => 30 });
  const t0 = performance.now();
  await alive(Promise.all([delayed.g.write(1), delayed.g.write(2)]));
  assert.ok(performance.now() - t0 >= 25, 'committed after the delay');
  assert.deepEqual(delayed.committed, [[1, 2]]);
});

test('a failed commit fails every writer of that batch with its error, and only them', async () => {
  const { g, committed, failNext } = unit({ maxBatch: 3 });
  failNext(1);
  const results = await Promise.allSettled([1, 2, 3, 4, 5].map((n) => g.write(n)));
  const errs = results.slice(0, 3).map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'fulfilled'));
  assert.deepEqual(errs, ['disk full', 'disk full', 'disk full'], 'every writer of the failed batch is told');
  assert.deepEqual(results.slice(3).map((r) => r.status), ['fulfilled', 'fulfilled'], 'the next batch is not failed with it');
  assert.deepEqual(committed, [[4, 5]]);
  // settled(): the error of the batch holding the last write queued so far.
  failNext(1);
  const w = g.write(6).catch(() => undefined);
  await assert.rejects(g.settled(), /disk full/);
  await w;
  await g.settled();
  // A flush its caller runs throws the error (its writers were told too).
  failNext(1);
  const x = g.write(7);
  assert.throws(() => g.flush(), /disk full/);
  await assert.rejects(x, /disk full/);
});

test('with retryMs a failed batch is kept and committed later; its writers hear only then, nothing is lost', { timeout: slow(10_000) }, async () => {
  const errors: unknown[] = [];
  // One write per batch: the batch after the failed one must be kept too.
  const { g, committed, failNext } = unit({ timing: () => 'turn', retryMs: 20, maxBatch: 1, onError: (e) => errors.push(e) });
  failNext(2);
  const ps = [1, 2].map((n) => g.write(n));
  let heard = false;
  void Promise.all(ps).then(() => (heard = true));
  await turn();
  assert.equal(heard, false);
  g.push(3);
  await alive(Promise.all(ps));
  await alive(g.settled());
  assert.deepEqual(committed.flat(), [1, 2, 3], 'kept in order, before what came later');
  assert.equal(errors.length, 2, 'each background failure is told to onError');
});

test('applied runs for each write once its batch is committed; if it throws, that writer alone fails', async () => {
  const order: string[] = [];
  const { g } = unit({
    applied: (n) => {
      if (n === 2) throw new Error('bad row');
      order.push(`applied ${n}`);
    },
    onWritten: () => order.push('written'),
  });
  const r = await Promise.allSettled([1, 2, 3].map((n) => g.write(n)));
  assert.deepEqual(r.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled']);
  assert.deepEqual(order, ['applied 1', 'applied 3', 'written']);
});

test('close commits what is queued; later writes are refused with the closed error', async () => {
  const { g, committed } = unit({ timing: () => 60_000, closedError: () => new Error('the log is closed') });
  const ps = [1, 2].map((n) => g.write(n));
  g.push(3);
  g.close();
  assert.deepEqual(committed, [[1, 2, 3]], 'close wrote the queue at once');
  await Promise.all(ps);
  await assert.rejects(g.write(4), /the log is closed/);
  assert.throws(() => g.push(5), /the log is closed/);
  g.close();
  assert.deepEqual(committed, [[1, 2, 3]]);
});

test('no write lost or committed twice: writes from many turns, tasks and flushes, some queued while a batch commits', async () => {
  const seen: number[] = [];
  let next = 0;
  const g: GroupCommit<number> = new GroupCommit<number>({
    commit: (batch) => void seen.push(...batch),
    timing: () => (next % 3 === 0 ? 'task' : next % 3 === 1 ? 'turn' : 2),
    maxBatch: 7,
    // A write queued while a batch is being told (as the bridge's forward does) waits for a later batch.
    onWritten: (batch) => {
      if (batch.includes(50)) void g.write(10_000);
    },
  });
  const ps: Promise<void>[] = [];
  for (let round = 0; round < 20; round++) {
    const n = 1 + (round % 6);
    for (let i = 0; i < n; i++) ps.push(g.write(next++));
    if (round % 5 === 4) g.flush();
    if (round % 2) await turn();
    else await Promise.resolve();
  }
  await alive(Promise.all(ps));
  await alive(g.settled());
  const expect = [...Array(next).keys()];
  assert.deepEqual(seen.filter((n) => n !== 10_000), expect, 'every write committed once, in order');
  assert.equal(seen.filter((n) => n === 10_000).length, 1, 'the write queued during a commit was committed once, later');
  assert.ok(seen.indexOf(10_000) > seen.indexOf(50));
});
