/**
 * The runtime profile file (written by `aios-device demo`): where a runtime reaches the bridge and as whom.
 */
import { existsSync } from 'node:fs';
import { say } from './say.js';
import { readUserFile } from './process.js';
import { SaidError } from '../i18n/said.js';
import type { RuntimeProfile } from '../runtime-client/client.js';

/** Reads a runtime profile file (written by `aios-device demo`). */
export function readProfile(file: string): RuntimeProfile {
  if (!existsSync(file)) throw new Error(say('cli.usage.no_profile', { file }));
  const text = readUserFile(file);
  try {
    return JSON.parse(text) as RuntimeProfile;
  } catch (e) {
    throw new SaidError({ key: 'cli.file.not_json', params: { file, detail: (e as Error).message } });
  }
}
