/**
 * Structured logs (pino). Log call ids, function ids, durations and states; never arguments' contents,
 * tokens or file data. Pino's redaction is a second line of defence for fields that must never appear.
 */
import { pino } from 'pino';
import type { Logger } from '../sdk/index.js';

/** Field paths pino always censors. */
export const REDACT_PATHS = ['token', 'access_token', 'refresh_token', 'authorization', 'password', 'arguments', 'args', 'data', 'content', '*.token', '*.access_token', '*.refresh_token', '*.authorization', '*.password'];

/** Creates the process logger: JSON lines to a file, or to stderr. */
export function createLogger(opts: { level?: string; file?: string; name?: string } = {}): Logger {
  // Asynchronous, buffered writes: a log line never costs a system call on the call path. The journal, not
  // the log, is what survives a crash; the last lines may be lost then.
  const destination = opts.file ? pino.destination({ dest: opts.file, mkdir: true, sync: false, minLength: 4096 }) : pino.destination({ dest: 2, sync: false });
  return pino(
    {
      name: opts.name ?? 'aios-device',
      level: opts.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
    },
    destination,
  ) as unknown as Logger;
}

/** A logger that drops everything (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' }) as unknown as Logger;
}
