import { alive, until } from '../helpers/wait.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openConsentDb } from '../../src/consent/db.js';
import { AuditLog } from '../../src/consent/audit-log.js';
import type { Outcome } from '../../src/protocol/messages.js';
import { tempDir } from './helpers.js';

function finished(callId: string, at: Date): Outcome {
  const iso = at.toISOString();
  return {
    call_id: callId, function: 'device.info', state: 'completed', error: null, replayed: false,
    accepted_at: iso, started_at: iso, finished_at: iso, duration_ms: 3,
  };
}

test('retention: rows older than the retention period are pruned, newer ones kept', () => {
  const t = tempDir();
  const db = openConsentDb(t.dir);
  try {
    let now = new Date('2026-03-01T00:00:00Z');
    const log = new AuditLog(db, 30, () => now);
    const entry = (id: string, daysAgo: number) => ({
      outcome: finished(id, new Date(now.getTime() - daysAgo * 86_400_000)),
      descriptor: undefined, args: undefined, requester: undefined, workspaceId: 'ws', userId: 'u',
    });
    log.record(entry('old', 45));
    log.record(entry('recent', 10));
    assert.equal(log.prune(), 1);
    assert.deepEqual(log.list().map((r) => r.call_id), ['recent']);
    now = new Date(now.getTime() + 25 * 86_400_000);
    log.prune();
    assert.deepEqual(log.list(), []);
  } finally {
    db.close();
    t.cleanup();
  }
});

// The agent's writer: rows are committed by a worker thread, and nothing is lost if it cannot be.
import { inThreadWriter, WorkerAuditWriter, type AuditWriter } from '../../src/consent/audit-writer.js';
import path from 'node:path';
import fs from 'node:fs';

/** An in-thread writer that counts the rows it had to write. */
function countingFallback(db: ReturnType<typeof openConsentDb>): AuditWriter & { rows: number } {
  const inner = inThreadWriter(db);
  const w = { rows: 0, write: (rows: unknown[][], p?: string) => { w.rows += rows.length; inner.write(rows, p); }, sync: () => undefined, close: () => undefined };
  return w;
}

const entryAt = (id: string, at: Date) => ({
  outcome: finished(id, at), descriptor: undefined, args: undefined, requester: undefined, workspaceId: 'ws', userId: 'u',
});

/**
 * An audit log on a worker writer over `db`, its fallback counting what it had to write and its errors
 * kept. A worker loading TypeScript through tsx on a busy machine can take seconds to start: reads wait a minute.
 */
function workerLog(db: ReturnType<typeof openConsentDb>, idleMs?: number) {
  const now = new Date('2026-03-01T00:00:00Z');
  const fallback = countingFallback(db);
  const errors: string[] = [];
  const writer = new WorkerAuditWriter(db.name, fallback, (m) => errors.push(m), 60_000, idleMs);
  return { now, fallback, errors, writer, log: new AuditLog(db, 30, () => now, writer) };
}

test('worker writer: rows are committed by the worker; a list waits for them; pruning happens there too; close commits the rest', () => {
  const t = tempDir();
  const db = openConsentDb(t.dir);
  try {
    const { now, fallback, errors, log } = workerLog(db);
    log.record(entryAt('old', new Date(now.getTime() - 45 * 86_400_000)));
    for (let i = 0; i < 250; i++) {
      log.record(entryAt(`c${i}`, now));
      if (i % 50 === 49) log.flush();
    }
    const rows = log.list({ limit: 1000 });
    // 251 rows handed over; the batch that crossed 200 rows also pruned the 45-day-old one.
    assert.equal(rows.length, 250);
    assert.ok(!rows.some((r) => r.call_id === 'old'));
    assert.equal(fallback.rows, 0, 'the worker wrote them');
    assert.deepEqual(errors, []);
    log.record(entryAt('last', now));
    log.close();
    assert.equal((db.prepare(`SELECT count(*) n FROM audit WHERE call_id = 'last'`).get() as { n: number }).n, 1);
  } finally {
    db.close();
    t.cleanup();
  }
});

test('worker writer: a worker that cannot open the database loses no row; they are written here and the failure is reported', () => {
  const t = tempDir();
  const db = openConsentDb(t.dir);
  try {
    const notADir = path.join(t.dir, 'plain-file');
    fs.writeFileSync(notADir, 'x');
    const fallback = countingFallback(db);
    const errors: string[] = [];
    const log = new AuditLog(db, 30, undefined, new WorkerAuditWriter(path.join(notADir, 'consent.sqlite'), fallback, (m) => errors.push(m)));
    for (let i = 0; i < 10; i++) log.record(entryAt(`c${i}`, new Date()));
    log.flush();
    log.record(entryAt('after', new Date()));
    const rows = log.list();
    assert.equal(rows.length, 11);
    assert.equal(fallback.rows, 11);
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /audit worker failed.*writing in this thread/);
    log.close();
  } finally {
    db.close();
    t.cleanup();
  }
});

/** An in-thread writer that throws its first `failures` writes (as SQLITE_BUSY past the timeout would). */
function flakyWriter(db: ReturnType<typeof openConsentDb>, failures: number): AuditWriter & { attempts: number } {
  const inner = inThreadWriter(db);
  const w = {
    attempts: 0,
    write: (rows: unknown[][], p?: string) => {
      w.attempts++;
      if (failures-- > 0) throw new Error('database is locked');
      inner.write(rows, p);
    },
    sync: () => undefined,
    close: () => undefined,
  };
  return w;
}

test('worker writer: when the worker has failed and this thread cannot write either, the batches are kept and written later', () => {
  const t = tempDir();
  const db = openConsentDb(t.dir);
  try {
    const notADir = path.join(t.dir, 'plain-file');
    fs.writeFileSync(notADir, 'x');
    const fallback = flakyWriter(db, 1);
    const errors: string[] = [];
    const log = new AuditLog(db, 30, undefined, new WorkerAuditWriter(path.join(notADir, 'consent.sqlite'), fallback, (m) => errors.push(m)));
    for (let i = 0; i < 5; i++) log.record(entryAt(`c${i}`, new Date()));
    // The worker fails and the batch cannot be written here the first time: nothing is thrown, the
    // failure is reported, and a later attempt (the same read's, or the next one's) writes the batch.
    log.list();
    assert.ok(errors.some((m) => /could not be written.*kept and tried again/.test(m)), errors.join(' | '));
    assert.equal(log.list().length, 5);
    assert.ok(fallback.attempts >= 2);
    log.record(entryAt('later', new Date()));
    log.close();
    assert.equal((db.prepare('SELECT count(*) n FROM audit').get() as { n: number }).n, 6);
  } finally {
    db.close();
    t.cleanup();
  }
});

test('a background batch that cannot be written is reported and retried, not thrown from the timer', async () => {
  const t = tempDir();
  const db = openConsentDb(t.dir);
  try {
    const errors: unknown[] = [];
    const writer = flakyWriter(db, 1);
    let reported!: () => void;
    const firstError = new Promise<void>((r) => (reported = r));
    const log = new AuditLog(db, 30, undefined, writer, (e) => {
      errors.push(e);
      reported();
    });
    log.record(entryAt('a', new Date()));
    await alive(firstError); // the timer's batch failed and said so (a throw from the timer would crash the test process)
    assert.equal(errors.length, 1);
    assert.equal(writer.attempts, 1);
    log.record(entryAt('b', new Date()));
    assert.deepEqual(log.list().map((r) => r.call_id).sort(), ['a', 'b']);
  } finally {
    db.close();
    t.cleanup();
  }
});

test('worker writer: a worker idle for its period is stopped once everything is committed, and the next batch starts another; no row lost or doubled', async () => {
  const t = tempDir();
  const db = openConsentDb(t.dir);
  try {
    const { now, fallback, errors, writer, log } = workerLog(db, 100);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 20; i++) log.record(entryAt(`r${round}-${i}`, now));
      log.flush();
      assert.equal(writer.workerRunning, true, `round ${round}: a worker takes the batch`);
      // Stopped only after its idle period, with every batch committed.
      await until(() => !writer.workerRunning, 30_000, `round ${round}: the idle worker stopped`);
      assert.equal(countRows(db), 20 * (round + 1));
    }
    assert.equal(fallback.rows, 0, 'every row went through a worker');
    assert.deepEqual(errors, [], 'a worker stopped for idleness is not a failure');
    log.close();
    assert.equal(countRows(db), 60);
  } finally {
    db.close();
    t.cleanup();
  }
});

function countRows(db: ReturnType<typeof openConsentDb>): number {
  return (db.prepare(`SELECT count(*) n FROM audit`).get() as { n: number }).n;
}
