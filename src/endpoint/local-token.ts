/**
 * The local bearer token of PROTOCOL.md §8: random, kept in a 0600 file in the data directory, compared in
 * constant time.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** File name of the token inside the data directory. */
export const LOCAL_TOKEN_FILE = 'local-token';

/** Reads the token from `<dataDir>/local-token`, creating it (0600) on first use. */
export async function loadOrCreateLocalToken(dataDir: string): Promise<string> {
  const file = join(dataDir, LOCAL_TOKEN_FILE);
  try {
    const existing = (await readFile(file, 'utf8')).trim();
    if (existing.length >= 32) {
      await chmod(file, 0o600);
      return existing;
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  // 'wx' refuses to follow a planted file; a racing agent that won keeps its token.
  try {
    await writeFile(file, token + '\n', { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateLocalToken(dataDir);
    throw e;
  }
  return token;
}

/** Constant-time check of a presented token against the expected one. */
export function tokenMatches(expected: string, presented: string | undefined): boolean {
  if (!presented) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token from an `Authorization: Bearer …` header, if any. */
export function bearerFrom(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}
