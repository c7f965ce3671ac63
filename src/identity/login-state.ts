/**
 * What a successful login leaves in the data directory (`login.json`): which bridge, workspace, user
 * and device name; never a token (those live in the secret store).
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeJsonFile } from '../base/json-file.js';

/** The file under the data directory. */
export const LOGIN_FILE = 'login.json';

/** Non-secret facts about the current login. */
export interface LoginState {
  /** The bridge's HTTP origin (OAuth endpoints, approval page). */
  bridge_url: string;
  /** The bridge's device WebSocket URL. */
  device_url: string;
  device_id: string;
  device_name: string;
  workspace_id: string;
  user_id: string;
  /** ISO time of the login. */
  logged_in_at: string;
  /** Where the tokens are: `keychain`, or the token file's path. */
  secret_store: 'keychain' | { token_file: string };
}

/** The current login, or null when the device is signed out. */
export async function readLoginState(dataDir: string): Promise<LoginState | null> {
  try {
    return JSON.parse(await readFile(join(dataDir, LOGIN_FILE), 'utf8')) as LoginState;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** Records a login (atomically). */
export async function writeLoginState(dataDir: string, state: LoginState): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, LOGIN_FILE);
  await writeJsonFile(file, state, 0o600);
}

/** Forgets the login. */
export async function clearLoginState(dataDir: string): Promise<void> {
  await rm(join(dataDir, LOGIN_FILE), { force: true });
}
