/**
 * The device's stable id: created once, at first run, in the data directory, and reused for every
 * login and session afterwards, so the bridge sees the same device across restarts and re-logins.
 */
import { randomBytes } from 'node:crypto';
import { coreMessage } from '../i18n/index.js';
import { SaidError } from '../i18n/said.js';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The file under the data directory that holds the id. */
export const DEVICE_FILE = 'device.json';

const ID = /^dev_[a-z0-9]{20}$/;

/** A new random device id such as `dev_k3v9…` (20 base-36 characters, ~103 bits). */
export function newDeviceId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  // 252 is the largest multiple of 36 below 256; rejecting the rest keeps characters uniform.
  while (s.length < 20) for (const b of randomBytes(24)) if (b < 252 && s.length < 20) s += alphabet[b % 36];
  return `dev_${s}`;
}

/** Reads the device id from `<dataDir>/device.json`, creating it on first run. */
export async function loadOrCreateDeviceId(dataDir: string): Promise<string> {
  const file = join(dataDir, DEVICE_FILE);
  const existing = await readId(file);
  if (existing) return existing;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const id = newDeviceId();
  try {
    // 'wx': two first runs at once must not end with two ids; the loser reads the winner's.
    await writeFile(file, JSON.stringify({ id, created_at: new Date().toISOString() }, null, 2) + '\n', { flag: 'wx', mode: 0o600 });
    return id;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const winner = await readId(file);
    if (!winner) throw new Error(`${file} exists but holds no valid device id.`, { cause: e });
    return winner;
  }
}

async function readId(file: string): Promise<string | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  const id = (JSON.parse(text) as { id?: unknown }).id;
  if (typeof id !== 'string' || !ID.test(id)) throw new SaidError(coreMessage('core.identity.bad_device_id', { file }));
  return id;
}
