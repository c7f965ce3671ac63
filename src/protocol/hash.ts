/**
 * JCS (RFC 8785) and the two digests of the protocol: `descriptor_hash` (§4) and `args_digest` (§5).
 */
import * as nodeCrypto from 'node:crypto';
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';

// canonicalize ships CommonJS typings with a default export function.
const canonicalizeFn = canonicalizeModule as unknown as (v: unknown) => string | undefined;

/** RFC 8785 canonical JSON text of a value. */
export function jcs(value: unknown): string {
  const s = canonicalizeFn(value);
  if (s === undefined) throw new TypeError('value cannot be canonicalized');
  return s;
}

/** `"sha256-" + base64url(SHA-256(JCS(descriptor without descriptor_hash)))`. */
export function descriptorHash(descriptor: Record<string, unknown>): string {
  const { descriptor_hash: _omit, ...rest } = descriptor;
  return 'sha256-' + createHash('sha256').update(jcs(rest), 'utf8').digest('base64url');
}

/** SHA-256 (hex) of JCS({ function, arguments }). */
export function argsDigest(fn: string, args: unknown): string {
  // The object's JCS written around the arguments' own ("arguments" sorts before "function"; an absent
  // member is left out, as JCS does): wrapping them in an object cost a canonicalize pass of its own per call.
  const members = args === undefined ? '' : `"arguments":${jcs(args)},`;
  return sha256Hex(`{${members}"function":${jcs(fn)}}`);
}

/**
 * SHA-256 in hex. On every call's path: the one-shot `crypto.hash` is cheaper than building a Hash object,
 * but it exists only from Node 20.12 (package.json allows 20.10), so older ones build the object.
 */
const sha256Hex: (text: string) => string =
  typeof (nodeCrypto as { hash?: unknown }).hash === 'function' ? (text) => nodeCrypto.hash('sha256', text, 'hex') : (text) => createHash('sha256').update(text, 'utf8').digest('hex');
