/**
 * V8's optimising compiler held off at rest (src/base/optimiser.ts), on the Node under test: nothing is
 * optimised while it is held, hot code is once it is released, a launch flag of the operator's is left
 * alone, and the agent releases it on its first call.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, inProcessStack } from '../helpers/stack.js';
import { holdOffOptimiser, optimiserHeld, releaseOptimiser } from '../../src/base/optimiser.js';

const CHILD = join(ROOT, 'test', 'fixtures', 'optimiser-child.ts');

function runChild(flags: string[]): { before: string; after: string } {
  const out = execFileSync(process.execPath, [...flags, '--trace-opt', '--import', 'tsx', CHILD], { cwd: ROOT, encoding: 'utf8' });
  assert.match(out, /done true/);
  const [before, after] = out.split('--- released ---');
  return { before: before!, after: after! };
}

test('held off, a hot function is not optimised; released, the next one is', () => {
  const { before, after } = runChild([]);
  assert.match(before, /held: true true/);
  assert.doesNotMatch(before, /completed optimizing[^\n]*hotWhileHeld/, 'optimised while held');
  assert.match(after, /held after release: false/);
  assert.match(after, /completed optimizing[^\n]*hotAfterRelease/, 'not optimised after the release');
});

test('a tier flag given at launch is left alone: nothing is held, and --no-opt stays in force after a release', () => {
  const { before, after } = runChild(['--no-opt']);
  assert.match(before, /held: false false/);
  assert.doesNotMatch(after, /completed optimizing[^\n]*hotAfterRelease/);
});

test('the agent releases the compiler on its first call', async () => {
  const s = await inProcessStack();
  try {
    assert.equal(holdOffOptimiser(), true);
    assert.equal(optimiserHeld(), true);
    const { record } = await s.client.call('diagnostics.echo', { value: 'x' });
    assert.equal(record.state, 'completed');
    assert.equal(optimiserHeld(), false);
  } finally {
    releaseOptimiser();
    await s.stop();
  }
});
