/**
 * `<data_dir>/user-settings.json`: what the person chose in Settings that is not a grant (those are in
 * user-grants.json): functions turned off, the log level. Written atomically, mode 0600; an unreadable
 * file is logged and treated as empty (the admin config alone then decides).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../base/logger.js';
import { writeJsonFileSync } from '../base/json-file.js';

/** The file's content (every part optional: older files lack newer parts). */
export interface UserSettingsDoc {
  version: 1;
  functions?: { disabled?: string[] };
  log_level?: string;
}

/** The file name inside the data folder. */
export const USER_SETTINGS_FILE = 'user-settings.json';

/** Reads and rewrites the user settings file of one data folder. */
export class UserSettingsFile {
  constructor(private readonly dataDir: string, private readonly log?: Logger) {}

  /** The file's content, or an empty document when it is absent or unreadable. */
  read(): UserSettingsDoc {
    try {
      const doc = JSON.parse(readFileSync(join(this.dataDir, USER_SETTINGS_FILE), 'utf8')) as unknown;
      if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new Error('not a JSON object');
      return { ...(doc as UserSettingsDoc), version: 1 };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') this.log?.warn({ err: (e as Error).message }, 'user settings unreadable; using the config alone');
      return { version: 1 };
    }
  }

  /** Applies `change` to the current content and writes the result. */
  update(change: (doc: UserSettingsDoc) => UserSettingsDoc): void {
    writeJsonFileSync(join(this.dataDir, USER_SETTINGS_FILE), change(this.read()), 0o600);
  }
}
