/**
 * The call retention sweep's logic (src/bridge/retention.ts): batches until one comes back short, a cutoff of
 * now minus the retention, sweeps that never overlap, a failing store logged and tried again. The stores'
 * removal itself runs against SQLite and a real PostgreSQL in the store suite (store-suite.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../src/base/logger.js';
import { CallRetention } from '../../src/bridge/retention.js';
import { normalizeBridgeConfig, CALL_RETENTION_S } from '../../src/config/bridge-config.js';

test('a sweep removes batch after batch until one comes back short, with the cutoff now minus the retention', async () => {
  const asked: [string, number][] = [];
  let left = 1234;
  const r = new CallRetention({
    prune: (before, limit) => {
      asked.push([before, limit]);
      const n = Math.min(left, limit);
      left -= n;
      return n;
    },
    retentionS: 86_400,
    log: silentLogger(),
    everyMs: 0,
    now: () => Date.parse('2026-12-05T12:00:00.000Z'),
  });
  assert.equal(await r.sweep(), 1234);
  assert.equal(left, 0);
  assert.ok(asked.length >= 3, `several batches: ${asked.length}`);
  assert.ok(asked.every(([before]) => before === '2026-12-04T12:00:00.000Z'), JSON.stringify(asked[0]));
  assert.equal(await r.sweep(), 0, 'nothing left');
  r.stop();
});

test('sweeps never overlap, and a store that fails is logged and tried again by the next sweep', async () => {
  let release!: () => void;
  let calls = 0;
  let fail = true;
  const warned: string[] = [];
  const log = { ...silentLogger(), warn: (_o: unknown, msg: string) => void warned.push(msg) } as unknown as ReturnType<typeof silentLogger>;
  const r = new CallRetention({
    prune: async () => {
      calls++;
      if (fail) throw new Error('store down');
      await new Promise<void>((res) => (release = res));
      return 0;
    },
    retentionS: 86_400,
    log,
    everyMs: 0,
  });
  assert.equal(await r.sweep(), 0);
  assert.equal(warned.length, 1, 'the failure is logged');
  fail = false;
  const a = r.sweep();
  const b = r.sweep();
  assert.equal(a, b, 'a second sweep while one runs is the same sweep');
  await new Promise((res) => setImmediate(res));
  release();
  assert.equal(await a, 0);
  assert.equal(calls, 2);
  r.stop();
});

test('config: call_retention_s defaults to 30 days and refuses less than one day', () => {
  assert.equal(normalizeBridgeConfig({ data_dir: '/tmp/x' }).call_retention_s, CALL_RETENTION_S);
  assert.equal(normalizeBridgeConfig({ data_dir: '/tmp/x', call_retention_s: 86_400 }).call_retention_s, 86_400);
  assert.throws(() => normalizeBridgeConfig({ data_dir: '/tmp/x', call_retention_s: 3600 }), /call_retention_s/);
});
