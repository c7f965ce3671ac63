// A card verifier that uses no project code and no jose: node:crypto plus a ten-line RFC 8785 serializer,
// so the tests catch a bug that the project's signer and verifier might share.
import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';

/** RFC 8785 for the values cards hold (strings, booleans, null, safe integers, arrays, objects). */
export function independentJcs(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(independentJcs).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    // Array.prototype.sort compares UTF-16 code units, which is what RFC 8785 §3.2.3 asks for.
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${independentJcs((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  if (typeof v === 'number' && !Number.isSafeInteger(v)) throw new Error('non-integer numbers are not handled here');
  return JSON.stringify(v);
}

/** True when `card.signature` verifies with the key of the same kid in `jwks` (ES256 or EdDSA). */
export function independentVerify(card: Record<string, unknown>, jwks: { keys: JsonWebKey[] }): boolean {
  const { signature, ...rest } = card as { signature: { algorithm: string; key_id: string; value: string } };
  const [h, empty, s] = signature.value.split('.');
  if (empty !== '' || !h || !s) return false;
  const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as { alg: string; kid: string; typ: string };
  if (header.typ !== 'aios-adapter+jws' || header.kid !== signature.key_id || header.alg !== signature.algorithm) return false;
  const jwk = jwks.keys.find((k) => k['kid'] === signature.key_id);
  if (!jwk) return false;
  const key = createPublicKey({ key: jwk, format: 'jwk' });
  const input = Buffer.from(`${h}.${Buffer.from(independentJcs(rest), 'utf8').toString('base64url')}`, 'ascii');
  const sig = Buffer.from(s, 'base64url');
  if (header.alg === 'ES256') return verify('sha256', input, { key, dsaEncoding: 'ieee-p1363' }, sig);
  if (header.alg === 'EdDSA') return verify(null, input, key, sig);
  return false;
}
