/**
 * Opaque random tokens and their storage form. The bridge keeps only SHA-256 hashes, so a copy of
 * its database does not let anyone act as a device. A short prefix per kind lets secret scanners
 * and humans tell the kinds apart without revealing anything.
 */
import { createHash, randomBytes } from 'node:crypto';

/** Token kinds and their prefixes. */
export const TOKEN_PREFIX = {
  access: 'aiosat_',
  refresh: 'aiosrt_',
  device_code: 'aiosdc_',
  web_session: 'aiosws_',
} as const;

/** A new random token of 256 bits. */
export function newToken(kind: keyof typeof TOKEN_PREFIX): string {
  return TOKEN_PREFIX[kind] + randomBytes(32).toString('base64url');
}

/** The hex SHA-256 of a token: what the store keeps and looks up by. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

// RFC 8628 §6.1: no vowels (no accidental words) and no easily confused characters.
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;

/** A new user code such as `WDJB-MJHT` (8 characters from a 20-letter alphabet, about 34.6 bits). */
export function newUserCode(): string {
  // 256 is not a multiple of 20; rejecting bytes >= 240 keeps every letter equally likely.
  let out = '';
  while (out.length < USER_CODE_LENGTH) {
    for (const b of randomBytes(16)) {
      if (b < 240 && out.length < USER_CODE_LENGTH) out += USER_CODE_ALPHABET[b % 20];
    }
  }
  return `${out.slice(0, 4)}-${out.slice(4)}`;
}

/** Normalises what a user typed (case, spaces, dash) to the stored `XXXX-XXXX` form, or null if it cannot be a user code. */
export function normaliseUserCode(input: string): string | null {
  const s = input.toUpperCase().replace(/[\s-]/g, '');
  if (s.length !== USER_CODE_LENGTH) return null;
  for (const c of s) if (!USER_CODE_ALPHABET.includes(c)) return null;
  return `${s.slice(0, 4)}-${s.slice(4)}`;
}
