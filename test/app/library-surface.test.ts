/**
 * The library surface (src/index.ts, package.json `main`) stays small: starting an agent or a bridge and the
 * handler SDK, plus types; what the Electron shell needs is in src/shell.ts, not here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as lib from '../../src/index.js';
import * as sdk from '../../src/sdk/index.js';

test('src/index.ts exports startAgent, startBridge and the handler SDK, and no other value', () => {
  const expected = ['startAgent', 'startBridge', ...Object.keys(sdk)].sort();
  assert.deepEqual(Object.keys(lib).sort(), expected);
  assert.equal(typeof lib.startAgent, 'function');
  assert.equal(typeof lib.startBridge, 'function');
  assert.equal(typeof lib.defineHandler, 'function');
});
