/**
 * The bridge-at-scale benchmark runs end to end at a small N: simulated devices in worker processes
 * connect with their own tokens and signed cards, the bridge is killed and started again, the devices come
 * back with backoff and jitter, and the calls made during the storm complete. The figures are produced;
 * their values are for `npm run bench:scale`, never for a test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScale } from '../../bench/bridge-scale.js';
import { slow } from '../helpers/wait.js';

test('bench:scale at N=40 produces every figure, and the calls made during the reconnect storm complete', { timeout: slow(300_000) }, async () => {
  const r = await runScale({ devices: 40, workers: 2, calls: 5, concurrency: 40, restart: true, reconnectLimitMs: 180_000 });
  assert.equal(r.devices, 40);
  assert.equal(r.workers, 2);
  assert.ok(r.card_bytes > 4000, `a real-size signed card (${r.card_bytes} bytes)`);
  for (const [k, v] of Object.entries({ idle: r.bridge_idle_rss_kb, loaded: r.bridge_loaded_rss_kb, connect: r.connect_all_ms })) {
    assert.ok(Number.isFinite(v) && v > 0, `${k}: ${v}`);
  }
  assert.ok(Number.isFinite(r.rss_per_device_bytes), 'RSS per device');
  assert.ok(r.restart, 'the restart figures');
  assert.equal(r.restart.reconnected, 40, 'every device came back');
  assert.ok(r.restart.reconnect_all_ms !== null && r.restart.reconnect_all_ms >= 0);
  assert.ok(r.restart.since_kill_ms !== null && r.restart.since_kill_ms >= r.restart.reconnect_all_ms);
  assert.ok(r.bridge_cpu_ms_per_connect > 0 && r.restart.bridge_cpu_ms_per_reconnect > 0);
  assert.equal(r.restart.calls, 5);
  assert.equal(r.restart.calls_completed, 5, 'every call made during the storm completes');
});
