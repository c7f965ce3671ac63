/**
 * Golden wire fixtures: every file in test/fixtures/wire is a message of the kind its name says and must
 * validate against that schema; every file in invalid/ must not. A message shape cannot drift silently.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import * as M from '../../src/protocol/messages.js';
import { schemaValidator } from '../../src/protocol/schema-validator.js';
import { ROOT } from '../helpers/stack.js';

const dir = join(ROOT, 'test', 'fixtures', 'wire');
const KINDS: [string, TSchema][] = [
  ['session.hello.params', M.HelloParams],
  ['session.hello.result', M.HelloResult],
  ['function.invoke.params', M.InvokeParams],
  ['function.cancel.params', M.CancelParams],
  ['outcome', M.Outcome],
  ['notification.call_state.params', M.CallStateNote],
  ['notification.progress.params', M.ProgressNote],
  ['notification.tools_changed.params', M.ToolsChanged],
  ['call.report.params', M.CallReportParams],
  ['call.report.result', M.CallReportResult],
  ['descriptor', M.Descriptor],
];
const schemaFor = (file: string) => KINDS.find(([k]) => file === `${k}.json` || file.startsWith(`${k}.`))?.[1];

test('every valid fixture matches its schema', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  assert.ok(files.length >= 10);
  for (const f of files) {
    const schema = schemaFor(f);
    assert.ok(schema, `${f}: no schema for this name`);
    assert.deepEqual(schemaValidator.validate(schema, JSON.parse(readFileSync(join(dir, f), 'utf8'))), [], f);
  }
});

test('every invalid fixture is refused', () => {
  const files = readdirSync(join(dir, 'invalid'));
  assert.ok(files.length >= 3);
  for (const f of files) {
    const schema = schemaFor(f);
    assert.ok(schema, `${f}: no schema for this name`);
    assert.notDeepEqual(schemaValidator.validate(schema, JSON.parse(readFileSync(join(dir, 'invalid', f), 'utf8'))), [], f);
  }
});
