/** Violations name the pointer and say what would be valid: unions of literals and enums list their values once. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { schemaValidator, SchemaValidator } from '../../src/protocol/schema-validator.js';

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

describe('schemas that declare draft-07 (as MCP servers built with zod publish them)', () => {
  const draft07 = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    properties: { a: { type: 'number' }, b: { type: 'number' } },
    required: ['a', 'b'],
    additionalProperties: false,
  };
  test('compile with their own dialect and validate', () => {
    const v = new SchemaValidator();
    assert.doesNotThrow(() => v.compile(draft07));
    assert.deepEqual(v.validate(draft07, { a: 1, b: 2 }), []);
    assert.deepEqual(v.validate(draft07, { a: 'x', b: 2 }), [{ pointer: '/a', message: 'must be number' }]);
  });
  test('draft-07 keywords keep their draft-07 meaning (array items as a tuple)', () => {
    const v = new SchemaValidator();
    const tuple = { $schema: 'http://json-schema.org/draft-07/schema', type: 'array', items: [{ type: 'string' }], additionalItems: false };
    assert.deepEqual(v.validate(tuple, ['x']), []);
    assert.equal(v.validate(tuple, ['x', 1]).length, 1);
  });
});
