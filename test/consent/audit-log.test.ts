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
