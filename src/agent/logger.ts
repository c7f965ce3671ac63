/**
 * Structured logs (pino). Log call ids, function ids, durations and states; never arguments' contents,
 * tokens or file data. Pino's redaction is a second line of defence for fields that must never appear.
 */
import { pino } from 'pino';
import type { Logger } from '../sdk/index.js';

/** Field paths pino always censors. */
export const REDACT_PATHS = ['token', 'access_token', 'refresh_token', 'authorization', 'password', 'arguments', 'args', 'data', 'content', '*.token', '*.access_token', '*.refresh_token', '*.authorization', '*.password'];

const fixedShape = new WeakMap<Logger, Logger>();

/** Creates the process logger: JSON lines to a file, or to stderr. */
export function createLogger(opts: { level?: string; file?: string; name?: string } = {}): Logger {
  // Asynchronous, buffered writes: a log line never costs a system call on the call path. The journal, not
  // the log, is what survives a crash; the last lines may be lost then.
  const destination = opts.file ? pino.destination({ dest: opts.file, mkdir: true, sync: false, minLength: 4096 }) : pino.destination({ dest: 2, sync: false });
  const base = { name: opts.name ?? 'aios-device', level: opts.level ?? 'info', base: { pid: process.pid } };
  const log = pino({ ...base, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination) as unknown as Logger;
  fixedShape.set(log, pino(base, destination) as unknown as Logger);
  return log;
}

/**
 * The same log without the redaction pass, for lines whose fields are fixed by the program and can
 * never hold a secret (the one line per finished call: ids, state, duration, error type). Redaction
 * costs more than the rest of such a line. Any other logger is returned as it is.
 */
export function fixedShapeLogger(log: Logger): Logger {
  return fixedShape.get(log) ?? log;
}

/** A logger that drops everything (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' }) as unknown as Logger;
}
