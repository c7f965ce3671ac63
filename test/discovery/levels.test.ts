/** A third-party function's level is max(its card's claim, the chosen level), high unless someone chose (issue 35). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { effectiveLevel } from '../../src/discovery/mcp-adapter.js';

test('the chosen level defaults to high; a claim can raise it, never lower it; critical stays critical', () => {
  assert.equal(effectiveLevel('public', undefined), 'high', 'an author claiming public is still asked');
  assert.equal(effectiveLevel(undefined, undefined), 'high', 'an MCP tool (no claim) is asked');
  assert.equal(effectiveLevel('public', 'public'), 'public', 'lowered by the admin');
  assert.equal(effectiveLevel('medium', 'low'), 'medium', 'never below the claim');
  assert.equal(effectiveLevel('critical', 'public'), 'critical');
  assert.equal(effectiveLevel(undefined, 'low'), 'low');
});
