/**
 * Opening `log.file` (agent and bridge) so that other users cannot read it (issue 27, finding 6): a new
 * file is created 0600 and its missing folders 0700; a folder that exists is never changed (`/var/log`);
 * an existing regular file that other users can read (`o+r`) is refused with the fix in the message. A
 * file only its group can read (logrotate's `create 0640 root adm`) is accepted, and so is a device
 * (`/dev/stderr`), which keeps nothing for anyone to read.
 */
import { closeSync, constants, fchmodSync, fstatSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

/** The log file cannot be used; `said` is its sentence as a catalogue message (the CLI renders it). */
export class LogFileError extends Error {
  readonly code = 'log_file_readable';
  readonly said: { key: 'core.log.file_readable'; params: { file: string; mode: string } };
  constructor(readonly file: string, mode: number) {
    const m = (mode & 0o777).toString(8).padStart(3, '0');
    super(`The log file ${file} can be read by other users (mode ${m}); run: chmod o-r ${file}`);
    this.name = 'LogFileError';
    this.said = { key: 'core.log.file_readable', params: { file, mode: m } };
  }
}

/**
 * Opens the log file for appending (creating it 0600, and its missing folders 0700); returns the descriptor.
 * `ours`: the program chose this path itself (the demo's logs, the tray's default `tray.log`), so a file an
 * older version left readable is made private instead of refused.
 */
export function openLogFile(file: string, ours = false): number {
  // Only the folders that do not exist are created (mode 0700, umask permitting); existing ones keep theirs.
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const fd = openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o600);
  // Checked on the descriptor that will be written, so a file swapped in between is what is judged.
  const st = fstatSync(fd);
  const mode = st.mode;
  // Only a regular file keeps what is written for others to read; a device (/dev/stderr, /dev/null) does not.
  const readable = st.isFile() && (mode & 0o004) !== 0;
  if (readable && ours && st.uid === process.getuid?.()) {
    fchmodSync(fd, 0o600);
    return fd;
  }
  if (readable) {
    closeSync(fd);
    throw new LogFileError(file, mode);
  }
  return fd;
}
