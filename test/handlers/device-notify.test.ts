/**
 * device.notify against a real notification daemon: dunst on a private D-Bus session under Xvfb
 * (TESTING.md). node-notifier's own "ok" proves nothing, so the test asserts on what dbus-monitor saw.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers/stack.js';

test('device.notify puts a Notify call with the title on the session bus; so do the prompt-waiting notice and, for an outdated client, the update notice', () => {
  const env = { ...process.env };
  delete env['NODE_TEST_CONTEXT'];
  const r = spawnSync('dbus-run-session', ['--', 'xvfb-run', '-a', process.execPath, '--import', 'tsx', join(ROOT, 'test/handlers/notify-session.ts')], { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('RESULT '));
  assert.ok(line, `no result from the session script: ${r.stderr?.slice(-500)}`);
  const res = JSON.parse(line.slice(7)) as { state?: string; seen?: boolean; prompt_notice?: boolean; update_notice?: boolean; fault?: string };
  assert.equal(res.fault, undefined);
  assert.equal(res.state, 'completed');
  assert.equal(res.seen, true);
  assert.equal(res.prompt_notice, true);
  assert.equal(res.update_notice, true);
});
