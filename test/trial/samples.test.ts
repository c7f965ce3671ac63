/** Issue #30: the trial's argument generation covers oneOf/anyOf/const/formats/patterns, or names exactly what it cannot. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sampleValid } from '../../src/trial/samples.js';
import { schemaValidator } from '../../src/protocol/schema-validator.js';

const valid = (schema: Record<string, unknown>) => {
  const s = sampleValid(schema);
  assert.ok(s.ok, s.ok ? '' : s.reason);
  assert.deepEqual(schemaValidator.validate(schema, s.value), []);
  return s.value as Record<string, unknown>;
};

test('a oneOf of required-only alternatives adds to what the object requires (files.write_bytes)', () => {
  const v = valid({
    type: 'object',
    additionalProperties: false,
    required: ['path'],
    properties: { path: { type: 'string', maxLength: 4096 }, encoding: { const: 'base64', type: 'string' }, data: { type: 'string', pattern: '^[A-Za-z0-9+/]*={0,2}$' }, blob: { type: 'object', required: ['blob_id'], properties: { blob_id: { type: 'string' } } } },
    oneOf: [{ required: ['data'] }, { required: ['blob'] }],
  });
  assert.ok('path' in v && 'data' in v && !('blob' in v), JSON.stringify(v));
});

test('anyOf of consts, formats and patterns are generated; an unknown format is named', () => {
  assert.deepEqual(valid({ type: 'object', required: ['u'], properties: { u: { anyOf: [{ const: 'low', type: 'string' }, { const: 'high', type: 'string' }] } } }), { u: 'low' });
  for (const format of ['date-time', 'date', 'time', 'uri', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']) valid({ type: 'object', required: ['f'], properties: { f: { type: 'string', format } } });
  assert.deepEqual(valid({ type: 'object', required: ['lock'], properties: { lock: { type: 'string', pattern: '^[a-z0-9_-]{1,40}$' } } }), { lock: 'x' });
  valid({ type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' } } });
  const odd = sampleValid({ type: 'object', required: ['f'], properties: { f: { type: 'string', format: 'iri-reference-template' } } });
  assert.ok(!odd.ok && /format "iri-reference-template"/.test(odd.reason));
  const pat = sampleValid({ type: 'object', required: ['k'], properties: { k: { type: 'string', pattern: '^Q{3}Z$' } } });
  assert.ok(!pat.ok && /pattern \^Q\{3\}Z\$/.test(pat.reason), pat.ok ? '' : pat.reason);
});

test('a oneOf where every alternative fails says why for each', () => {
  const s = sampleValid({ type: 'object', oneOf: [{ required: ['a'], properties: { a: { type: 'string', pattern: '^Q{3}$' } } }, { required: ['b'], properties: { b: { type: 'string', format: 'nope' } } }] });
  assert.ok(!s.ok);
  assert.match(s.reason, /pattern .*; .*format "nope"/);
});
