/**
 * Password hashing for the bridge's own users: scrypt (a memory-hard KDF from node:crypto) with a
 * per-user random salt, stored as one self-describing string so that the cost can be raised later
 * without invalidating existing hashes.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const PREFIX = 'scrypt';
const DEFAULT_COST = { N: 1 << 15, r: 8, p: 1 } as const;
const KEY_LEN = 32;

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }): Promise<Buffer> {
  // maxmem must cover 128 * N * r bytes, or node refuses the cost we ask for.
  const opts: ScryptOptions = { ...cost, maxmem: 256 * cost.N * cost.r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LEN, opts, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** Hashes a password into `scrypt$N$r$p$<salt b64url>$<hash b64url>`, the form `password_hash` takes in the bridge config. */
export async function hashPassword(password: string, cost: { N: number; r: number; p: number } = DEFAULT_COST): Promise<string> {
  if (password.length === 0) throw new Error('A password must not be empty.');
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost);
  return [PREFIX, cost.N, cost.r, cost.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** True when `stored` is a hash string this module can verify. */
export function isPasswordHash(stored: string): boolean {
  return parse(stored) !== null;
}

function parse(stored: string): { cost: { N: number; r: number; p: number }; salt: Buffer; key: Buffer } | null {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== PREFIX) return null;
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0)) return null;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const key = Buffer.from(parts[5]!, 'base64url');
  if (salt.length < 8 || key.length !== KEY_LEN) return null;
  return { cost: { N, r, p }, salt, key };
}

// Verifying against this when the user does not exist keeps the response time of "no such user"
// equal to that of "wrong password", so sign-in timing does not reveal user names.
let decoy: Promise<string> | undefined;

/** Checks a password against a stored hash in constant time; a null `stored` (unknown user) costs the same and fails. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  decoy ??= hashPassword('decoy-password-for-unknown-users');
  const parsed = parse(stored ?? (await decoy));
  if (!parsed) return false;
  const key = await derive(password, parsed.salt, parsed.cost);
  return timingSafeEqual(key, parsed.key) && stored !== null;
}
