/**
 * The audit worker (see audit-writer.ts): commits each batch of rows it is handed (and the pruning that
 * comes with it), one transaction per batch, on its own connection to the consent database, then
 * publishes the batch's number (`DONE`), bumps `SIGNAL` and wakes a reader waiting on it. On any
 * failure it sets `BROKEN` (and bumps `SIGNAL`) and marks nothing more: the writer then writes this
 * batch and every later one itself.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { openDatabase } from '../storage/sqlite.js';
import { AUDIT_INSERT, AUDIT_PRUNE, BROKEN, DONE, SIGNAL, type AuditRow } from './audit-writer.js';

const { file, shared: buffer } = workerData as { file: string; shared: SharedArrayBuffer };
const shared = new Int32Array(buffer);

function signal(): void {
  Atomics.add(shared, SIGNAL, 1);
  Atomics.notify(shared, SIGNAL);
}

function broken(e: unknown): void {
  Atomics.store(shared, BROKEN, 1);
  signal();
  parentPort!.postMessage({ error: String(e) });
}

let commit: ((rows: AuditRow[], pruneBefore: string | undefined) => void) | undefined;
try {
  const db: Database.Database = openDatabase(file);
  const insert = db.prepare(AUDIT_INSERT);
  const prune = db.prepare(AUDIT_PRUNE);
  commit = db.transaction((rows: AuditRow[], pruneBefore: string | undefined) => {
    for (const r of rows) insert.run(...r);
    if (pruneBefore) prune.run(pruneBefore);
  });
} catch (e) {
  broken(e);
}

parentPort!.on('message', (m: { seq: number; json: string; pruneBefore?: string }) => {
  if (!commit || Atomics.load(shared, BROKEN)) return;
  try {
    commit(JSON.parse(m.json) as AuditRow[], m.pruneBefore);
  } catch (e) {
    broken(e);
    return;
  }
  Atomics.store(shared, DONE, m.seq);
  signal();
});
