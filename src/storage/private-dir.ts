/**
 * Data folders and files that hold call data, tokens or keys are private to the user running the
 * program: folders 0700, files 0600, whatever the umask. A data folder this program created carries a
 * marker file; only such a folder is tightened when it was opened up (e.g. `chmod 755`). Any other
 * folder that group or others can read is refused with a message saying what to do, because changing
 * the mode of a folder someone else chose could break whatever else lives there.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { coreMessage } from '../i18n/index.js';
import { SaidError } from '../i18n/said.js';

/** The file that marks a data folder as created by this program. */
export const DATA_DIR_MARKER = '.aios-device-data';

/** A data folder that cannot be used as it is; the message says why and what to do (in the reader's language: `said`). */
export class DataDirError extends SaidError {
  constructor(...said: Parameters<typeof coreMessage>) {
    super(coreMessage(...said));
    this.name = 'DataDirError';
  }
}

/**
 * Makes sure `dir` exists and only its owner can enter it: creates it 0700 with the marker, tightens it
 * when it carries the marker, else refuses. Returns true when it had to tighten the folder.
 */
export function ensurePrivateDir(dir: string): boolean {
  const marker = join(dir, DATA_DIR_MARKER);
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    writeMarker(marker);
    return false;
  }
  const st = statSync(dir);
  if (!st.isDirectory()) throw new DataDirError('core.data_dir.not_a_folder', { dir });
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) {
    throw new DataDirError('core.data_dir.other_user', { dir, uid: st.uid });
  }
  if (process.platform === 'win32' || (st.mode & 0o077) === 0) {
    if (!existsSync(marker)) writeMarker(marker);
    return false;
  }
  const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
  if (!existsSync(marker)) {
    throw new DataDirError('core.data_dir.open', { dir, mode });
  }
  chmodSync(dir, 0o700);
  return true;
}

/** Creates `file` empty with mode 0600 when it does not exist, and sets 0600 on it when it does. */
export function privateFile(file: string): void {
  if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  if (process.platform !== 'win32') chmodSync(file, 0o600);
}

function writeMarker(marker: string): void {
  writeFileSync(marker, 'This folder was created by aios-device and holds its private data; it is kept mode 0700.\n', { mode: 0o600 });
}
