/**
 * Adapter Card signatures (PROTOCOL.md §7.1): a detached compact JWS (RFC 7515 App. F) over JCS(card
 * without `signature`) (RFC 8785), protected header `{ alg, kid, typ: "aios-adapter+jws" }`.
 * Keys always come from the caller (trust store or origin JWKS): a `jku`, `jwk` or `x5u` header is ignored.
 */
import type { KeyObject } from 'node:crypto';
import { FlattenedSign, flattenedVerify, importJWK, type CryptoKey, type JWK } from 'jose';
import { jcs } from './hash.js';
import type { AdapterCard, CardSignature } from './manifest-schemas.js';
import { validateCard } from './manifest-schemas.js';

/** `typ` of the protected header. */
export const CARD_JWS_TYPE = 'aios-adapter+jws';
/** Accepted signature algorithms. */
export const CARD_ALGORITHMS = ['ES256', 'RS256', 'EdDSA'] as const;
export type CardAlgorithm = (typeof CARD_ALGORITHMS)[number];

/** A signing key as the identity module supplies it. */
export interface CardSigningKey {
  kid: string;
  privateKey: CryptoKey | KeyObject;
  publicJwk: JWK;
  alg: CardAlgorithm;
}

/** A verification key: a public JWK or an imported key. */
export type CardVerifyKey = JWK | CryptoKey | KeyObject;

/** Why a card failed verification; `message` is safe to show (no key material). */
export class CardVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CardVerificationError';
  }
}

/** The card minus its `signature`: what the JWS covers. */
export function unsignedPart(card: object): Record<string, unknown> {
  const { signature: _s, ...rest } = card as Record<string, unknown>;
  return rest;
}

/** The JWS payload bytes: JCS of the card without `signature`. */
export function signingPayload(card: object): Uint8Array {
  return new TextEncoder().encode(jcs(unsignedPart(card)));
}

/** Returns a copy of `card` carrying a fresh `signature`. */
export async function signCard<T extends object>(card: T, key: CardSigningKey): Promise<T & { signature: CardSignature }> {
  const jws = await new FlattenedSign(signingPayload(card))
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: CARD_JWS_TYPE })
    .sign(key.privateKey);
  return { ...(unsignedPart(card) as T), signature: { algorithm: key.alg, key_id: key.kid, value: `${jws.protected}..${jws.signature}` } };
}

/** Decoded protected header of a signature value, or undefined when malformed. */
export function protectedHeader(value: string): Record<string, unknown> | undefined {
  const [h] = value.split('.');
  try {
    const v = JSON.parse(Buffer.from(h ?? '', 'base64url').toString('utf8')) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Verifies a parsed card: schema, then signature with the key `resolveKey(kid)` returns. Throws
 * `CardVerificationError` with the reason; returns the card typed and the key id on success.
 */
export async function verifyCard(
  card: unknown,
  resolveKey: (kid: string, alg: CardAlgorithm) => CardVerifyKey | undefined | Promise<CardVerifyKey | undefined>,
): Promise<{ card: AdapterCard; kid: string; alg: CardAlgorithm }> {
  const violations = validateCard(card);
  if (violations.length) throw new CardVerificationError(`card does not match the schema (${violations.slice(0, 3).map((v) => `${v.pointer || '/'} ${v.message}`).join('; ')})`);
  const c = card as AdapterCard;
  const sig = c.signature;
  if (!sig) throw new CardVerificationError('card is not signed');
  const [h, empty, s] = sig.value.split('.');
  if (empty !== '' || !h || !s) throw new CardVerificationError('signature is not a detached compact JWS');
  const header = protectedHeader(sig.value);
  if (!header) throw new CardVerificationError('signature header is not valid JSON');
  const alg = header['alg'];
  if (!CARD_ALGORITHMS.includes(alg as CardAlgorithm) || alg !== sig.algorithm) throw new CardVerificationError('signature algorithm is not accepted or does not match the header');
  if (header['kid'] !== sig.key_id) throw new CardVerificationError('signature key id does not match the header');
  if (header['typ'] !== CARD_JWS_TYPE) throw new CardVerificationError(`signature typ is not ${CARD_JWS_TYPE}`);
  const found = await resolveKey(sig.key_id, alg as CardAlgorithm);
  if (!found) throw new CardVerificationError(`no trusted key with id ${sig.key_id}`);
  let key: CryptoKey | KeyObject | Uint8Array;
  try {
    key = isJwk(found) ? await importJWK(publicOnly(found), alg as string) : found;
  } catch {
    throw new CardVerificationError(`trusted key ${sig.key_id} cannot be used for ${String(alg)}`);
  }
  try {
    await flattenedVerify({ protected: h, payload: Buffer.from(signingPayload(c)).toString('base64url'), signature: s }, key, { algorithms: [alg as string] });
  } catch {
    throw new CardVerificationError('signature does not verify: the card was changed or signed with another key');
  }
  return { card: c, kid: sig.key_id, alg: alg as CardAlgorithm };
}

function isJwk(k: CardVerifyKey): k is JWK {
  return typeof (k as JWK).kty === 'string';
}

/** Strips private members so a private JWK handed in by mistake is never used as such. */
export function publicOnly(jwk: JWK): JWK {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, oth: _oth, k: _k, ...pub } = jwk as JWK & Record<string, unknown>;
  return pub as JWK;
}
