/**
 * The bridge's write-behind (`src/bridge/call-writes.ts`, on GroupCommit): a turn's new calls, changed
 * records and outcomes go in one transaction; a new call's submitter hears only after it; nothing is
 * forwarded or announced before its commit; a failed commit fails the submitters, loses the new calls and
 * keeps the outcomes, which are saved (and only then announced) a second later.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallWrites } from '../../src/bridge/call-writes.js';
import type { BridgeStore, StoredCall } from '../../src/bridge/store.js';
import type { Applied, PendingOutcome } from '../../src/bridge/call-lifecycle.js';
import { createLogger } from '../../src/base/logger.js';
import { alive, until } from '../helpers/wait.js';

/** A store that records each transaction's writes; `fail` makes the next transactions throw. */
function fakeStore() {
  const txs: string[][] = [];
  let current: string[] | undefined;
  const s = {
    fail: 0,
    txs,
    transaction(fn: () => void) {
      if (s.fail > 0) {
        s.fail--;
        throw new Error('database is locked');
      }
      current = [];
      fn();
      txs.push(current);
      current = undefined;
    },
    insertCall: (c: StoredCall) => current!.push(`insert ${c.call_id}`),
    saveCall: (c: StoredCall) => current!.push(`save ${c.call_id}`),
  };
  return s;
}

const call = (id: string) => ({ workspace_id: 'ws', device_id: 'dev', call_id: id }) as unknown as StoredCall;
const pending = { o: { call_id: 'x', state: 'completed' }, byBridge: false, derive: false } as unknown as PendingOutcome;

function setup() {
  const store = fakeStore();
  const events: string[] = [];
  const writes = new CallWrites(store as unknown as BridgeStore, createLogger({ level: 'silent' }), {
    apply: (c: StoredCall, _p: PendingOutcome): Applied => {
      (c as { outcome?: unknown }).outcome = {};
      return 'new';
    },
    committed: (inserted, applied) => {
      for (const c of inserted) events.push(`forward ${c.call_id}`);
      for (const c of applied.keys()) events.push(`announce ${c.call_id}`);
    },
    lost: (inserted) => {
      for (const c of inserted) events.push(`lost ${c.call_id}`);
    },
  });
  return { store, events, writes };
}

test("a turn's writes are one transaction; forwards and announcements come after it", async () => {
  const { store, events, writes } = setup();
  const a = call('a');
  const b = call('b');
  const saved = writes.insert(a);
  writes.changed(b);
  writes.changed(b);
  writes.outcome(b, pending, false);
  assert.ok(writes.pendingOutcome(b), 'the taken outcome is seen before its commit');
  assert.deepEqual(store.txs, []);
  await saved;
  assert.deepEqual(store.txs, [['insert a', 'save b']], 'one transaction; b saved once, with its outcome');
  assert.deepEqual(events, ['forward a', 'announce b']);
  assert.equal(writes.pendingOutcome(b), undefined);
  writes.close();
});

test('a failed commit fails the submitter, loses the new call, and saves the outcome a second later before announcing it', async () => {
  const { store, events, writes } = setup();
  store.fail = 1;
  const saved = writes.insert(call('a'));
  writes.outcome(call('b'), pending, false);
  await assert.rejects(saved, /database is locked/);
  assert.deepEqual(events, ['lost a'], 'neither forwarded nor announced');
  await alive(until(() => events.includes('announce b'), 5000, 'the kept outcome saved and announced'));
  assert.deepEqual(store.txs, [['save b']]);
  writes.close();
});
