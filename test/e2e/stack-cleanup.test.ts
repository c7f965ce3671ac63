/**
 * The CLI stack helper (test/helpers/stack.ts `processStack`) ends what it started when it cannot hand the
 * stack over: an agent that never comes online leaves no bridge process behind, so a failed `before` hook
 * cannot keep a test file alive until its 15-minute timeout (as it did in CI on a busy machine).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { processStack } from '../helpers/stack.js';
import { slow } from '../helpers/wait.js';

/** This process's live children. */
function children(): number[] {
  return readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

test('an agent that exits at start: processStack throws and leaves no child process running', { timeout: slow(300_000) }, async () => {
  const before = children();
  // An unknown key: the agent refuses its config and exits before it connects.
  await assert.rejects(processStack({ agent: { not_a_config_key: true } }), /the agent exited before the device came online/);
  const left = children().filter((p) => !before.includes(p));
  assert.deepEqual(left, [], 'the bridge and the agent were stopped');
});
