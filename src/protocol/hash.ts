/**
 * JCS (RFC 8785) and the two digests of the protocol: `descriptor_hash` (§4) and `args_digest` (§5).
 */
import { createHash, hash } from 'node:crypto';
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
  // One-shot hash(): on every call's path, and cheaper than building a Hash object.
  return hash('sha256', jcs({ function: fn, arguments: args }), 'hex');
}
