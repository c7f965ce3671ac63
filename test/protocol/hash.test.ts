/** JCS (RFC 8785) golden vectors and the protocol digests. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { jcs, descriptorHash, argsDigest } from '../../src/protocol/hash.js';

test('JCS orders keys by UTF-16 code units and normalises numbers (RFC 8785 §3.2.3 vectors)', () => {
  assert.equal(jcs({ b: 1, a: [true, null, 'x'], c: { z: 1e21, y: 0.000001, x: -0 } }), '{"a":[true,null,"x"],"b":1,"c":{"x":0,"y":0.000001,"z":1e+21}}');
  // The RFC's sorting example: keys ordered by UTF-16 code units, not code points.
  const input = { '\u20ac': 'Euro Sign', '\r': 'Carriage Return', '\ufb33': 'Hebrew Letter Dalet With Dagesh', '1': 'One', '\ud83d\ude00': 'Emoji: Grinning Face', '\u0080': 'Control', '\u00f6': 'Latin Small Letter O With Diaeresis' };
  // Compared as text: JSON.parse would reorder the integer-like key "1".
  const order = ['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'];
  const expected = '{' + order.map((k) => JSON.stringify(k) + ':' + JSON.stringify((input as Record<string, string>)[k])).join(',') + '}';
  assert.equal(jcs(input), expected);
  assert.equal(jcs('\u2028'), '"\u2028"');
});

test('descriptor_hash is sha256- + base64url of the JCS of the descriptor without its hash', () => {
  const d = { id: 'a.b', name: 'N', descriptor_hash: 'sha256-ignored' };
  const expected = 'sha256-' + createHash('sha256').update('{"id":"a.b","name":"N"}').digest('base64url');
  assert.equal(descriptorHash(d), expected);
  assert.equal(descriptorHash({ name: 'N', id: 'a.b' }), expected, 'key order does not matter');
});

test('args_digest hashes {function, arguments} canonically', () => {
  const a = argsDigest('f.x', { b: 2, a: 1 });
  assert.equal(a, createHash('sha256').update('{"arguments":{"a":1,"b":2},"function":"f.x"}').digest('hex'));
  assert.notEqual(a, argsDigest('f.x', { a: 1, b: 3 }));
  assert.notEqual(a, argsDigest('f.y', { a: 1, b: 2 }));
  // The digest is JCS of the whole { function, arguments } object, whatever the arguments hold.
  const whole = (fn: string, args: unknown) => createHash('sha256').update(jcs({ function: fn, arguments: args })).digest('hex');
  for (const [fn, args] of [['device.info', {}], ['f.\u20ac', { z: [1, { y: '\ud83d\ude00', x: null }], a: 1e21 }], ['f.x', undefined], ['f.x', []], ['f.x', 'text'], ['f.x', null]] as const) {
    assert.equal(argsDigest(fn, args), whole(fn, args), `${fn} ${JSON.stringify(args)}`);
  }
  assert.throws(() => argsDigest('f.x', { s: '\ud800' }), /surrogate/i);
  assert.throws(() => argsDigest('f.\ud800', {}), /surrogate/i);
});
