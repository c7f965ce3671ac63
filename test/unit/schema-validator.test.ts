/** Violations name the pointer and say what would be valid: unions of literals and enums list their values once. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { schemaValidator } from '../../src/protocol/schema-validator.js';

test('a union of literals and an enum say which values are allowed, once per pointer', () => {
  const schema = Type.Object({
    mode: Type.Union([Type.Literal('a'), Type.Literal('b')]),
    kind: Type.Unsafe<string>({ enum: ['x', 'y'] }),
    only: Type.Literal('z'),
    n: Type.Integer(),
  });
  assert.deepEqual(schemaValidator.validate(schema, { mode: 'c', kind: 'q', only: 'w', n: 1.5 }), [
    { pointer: '/mode', message: 'must be one of "a", "b"' },
    { pointer: '/kind', message: 'must be one of "x", "y"' },
    { pointer: '/only', message: 'must be "z"' },
    { pointer: '/n', message: 'must be integer' },
  ]);
  assert.deepEqual(schemaValidator.validate(schema, { mode: 'a', kind: 'x', only: 'z', n: 1 }), []);
});

test('a oneOf of required alternatives says "exactly one of" once, whether none or both are given', () => {
  const schema = { type: 'object', properties: { data: { type: 'string' }, blob: { type: 'object' }, path: { type: 'string' } }, required: ['path'], oneOf: [{ required: ['data'] }, { required: ['blob'] }] };
  const message = 'must have exactly one of "data", "blob"';
  assert.deepEqual(schemaValidator.validate(schema, { path: 'a' }), [{ pointer: '', message }]);
  assert.deepEqual(schemaValidator.validate(schema, { path: 'a', data: 'x', blob: {} }), [{ pointer: '', message }]);
  assert.deepEqual(schemaValidator.validate(schema, { data: 'x' }), [{ pointer: '/path', message: 'is required' }]);
  assert.deepEqual(schemaValidator.validate(schema, { path: 'a', blob: {} }), []);
});
