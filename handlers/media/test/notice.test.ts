/**
 * "Camera in use by <requester>" against a real notification daemon: dunst on a private D-Bus session under
 * Xvfb (TESTING.md); the test asserts on what dbus-monitor saw, not on node-notifier's answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../../test/helpers/stack.js';

test('a photo puts "Camera in use by <requester>" on the session bus', () => {
  const env = { ...process.env };
  delete env['NODE_TEST_CONTEXT'];
  const r = spawnSync('dbus-run-session', ['--', 'xvfb-run', '-a', process.execPath, '--import', 'tsx', join(ROOT, 'handlers/media/test/notice-session.ts')], { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('RESULT '));
  assert.ok(line, `no result from the session script: ${r.stderr?.slice(-500)}`);
  const res = JSON.parse(line.slice(7)) as { state?: string; seen?: boolean; fault?: string };
  assert.equal(res.fault, undefined);
  assert.equal(res.state, 'completed');
  assert.equal(res.seen, true);
});
