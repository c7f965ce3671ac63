/**
 * The Outbox (PROTOCOL.md §6.8) over a real journal: what finishes with no session up waits, what
 * finishes with one is delivered as the response; `flush` reports in batches and marks delivered only
 * what the bridge acknowledged; a lost response goes back and out on the session that is up; a link that
 * closed or was replaced gets nothing more.
 */
import { test } from 'node:test';
import { until } from '../helpers/wait.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Journal } from '../../src/agent/journal.js';
import { Outbox, REPORT_BATCH, type OutboxLink } from '../../src/agent/outbox.js';
import { silentLogger } from '../../src/base/logger.js';
import type { Outcome } from '../../src/protocol/messages.js';

function outcome(id: string): Outcome {
  const at = new Date().toISOString();
  return { call_id: id, function: 'test.f', state: 'completed', output: {}, output_valid: true, error: null, replayed: false, accepted_at: at, started_at: at, finished_at: at, duration_ms: 0 };
}

function rig() {
  const dir = mkdtempSync(join(tmpdir(), 'aios-outbox-'));
  const journal = new Journal(join(dir, 'journal.sqlite'), { workspaceId: 'ws', deviceId: 'dev' });
  const outbox = new Outbox({ store: journal, log: silentLogger() });
  /** Journals an accepted call and finishes it through the outbox. */
  const finish = async (id: string) => {
    await journal.accept(id, 'test.f', 'digest-' + id, new Date().toISOString(), 'running', new Date().toISOString());
    const o = outcome(id);
    await outbox.finish(o, JSON.stringify(o));
  };
  const waiting = () => journal.outbox(1000).map((o) => o.call_id).sort();
  /** A link that records each report and acknowledges what `ack` lets through. */
  const link = (ack: (id: string) => boolean = () => true) => {
    const reports: string[][] = [];
    const l: OutboxLink & { open: boolean; reports: string[][] } = {
      open: true,
      reports,
      get isOpen() {
        return this.open;
      },
      report: async (outcomes) => {
        reports.push(outcomes.map((o) => o.call_id));
        return { accepted: outcomes.map((o) => o.call_id).filter(ack) };
      },
    };
    return l;
  };
  return { journal, outbox, finish, waiting, link, done: () => (journal.close(), rmSync(dir, { recursive: true, force: true })) };
}

test('an outcome finished with no session waits; with a session up it is delivered as the response', async () => {
  const r = rig();
  try {
    assert.equal(r.outbox.deliverable, false);
    await r.finish('offline-1');
    const l = r.link();
    r.outbox.online(l);
    assert.equal(r.outbox.deliverable, true);
    await r.finish('online-1');
    assert.deepEqual(r.waiting(), ['offline-1']);
    l.open = false;
    assert.equal(r.outbox.deliverable, false, 'a closing socket takes no response');
  } finally {
    r.done();
  }
});

test('flush reports in batches and keeps what the bridge did not acknowledge', async () => {
  const r = rig();
  try {
    const ids = Array.from({ length: REPORT_BATCH + 5 }, (_, i) => `c-${String(i).padStart(3, '0')}`);
    for (const id of ids) await r.finish(id);
    const all = r.link();
    r.outbox.online(all);
    await r.outbox.flush();
    assert.deepEqual(all.reports.map((b) => b.length), [REPORT_BATCH, 5]);
    assert.deepEqual(r.waiting(), []);

    for (const id of ['x-1', 'x-2']) {
      r.outbox.offline(all);
      await r.finish(id);
    }
    const picky = r.link((id) => id === 'x-1');
    r.outbox.online(picky);
    await r.outbox.flush();
    assert.deepEqual(picky.reports, [['x-1', 'x-2']], 'one report; a partial acknowledgement stops the flush until the next connect');
    assert.deepEqual(r.waiting(), ['x-2']);
  } finally {
    r.done();
  }
});

test('a lost response goes back to the outbox and out on the session that is up; a replaced link gets nothing', async () => {
  const r = rig();
  try {
    const first = r.link();
    r.outbox.online(first);
    await r.finish('lost-1');
    assert.deepEqual(r.waiting(), [], 'journalled as delivered: a session was up');
    const second = r.link();
    r.outbox.online(second); // a reconnect replaced the first session
    r.outbox.offline(first); // its close arrives late and changes nothing
    assert.equal(r.outbox.deliverable, true);
    // The answer is handed to the first session's socket, which closed: it goes back and out on the second.
    const putBack: string[] = [];
    const markUndelivered = r.journal.markUndelivered.bind(r.journal);
    r.journal.markUndelivered = (id) => (putBack.push(id), markUndelivered(id));
    const lost = outcome('lost-1');
    r.outbox.answered({ ...lost, replayed: true }, false);
    r.outbox.answered(lost, true);
    assert.deepEqual(putBack, [], 'a replayed answer, or one whose socket is open, stays delivered');
    r.outbox.answered(lost, false);
    assert.deepEqual(putBack, ['lost-1']);
    await until(() => second.reports.length, 10_000, 'the second report', 0);
    assert.deepEqual(second.reports, [['lost-1']]);
    assert.deepEqual(first.reports, []);
    await until(() => !r.waiting().length, 10_000, 'nothing waiting', 0);
  } finally {
    r.done();
  }
});
