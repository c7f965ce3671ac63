/**
 * Structured logs (pino). Log call ids, function ids, durations and states; never arguments' contents,
 * tokens or file data. Pino's redaction is a second line of defence for fields that must never appear.
 */
import { writeSync } from 'node:fs';
import { pino } from 'pino';
import { openLogFile } from './log-file.js';

/** Minimal structured logger (pino-compatible). Never pass argument contents, tokens or file data. */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** Field paths pino always censors. */
export const REDACT_PATHS = ['token', 'access_token', 'refresh_token', 'authorization', 'password', 'arguments', 'args', 'data', 'content', '*.token', '*.access_token', '*.refresh_token', '*.authorization', '*.password'];

/** The one line per finished call: fields fixed by the program, never a secret. */
export interface CallLine {
  call_id: string;
  function: string;
  state: string;
  duration_ms: number | null | undefined;
  error_type?: string | undefined;
}

/** Writes a call line at `info` or `warn`. */
export type CallLineWriter = (level: 'info' | 'warn', line: CallLine, msg: string) => void;

const callLines = new WeakMap<Logger, CallLineWriter>();
const LEVELS = { info: 30, warn: 40 } as const;

const atExit = new Set<() => void>();
let exitHooked = false;

/** Runs `flush` when the process exits (one 'exit' listener for every logger made). */
function flushAtExit(flush: () => void): void {
  atExit.add(flush);
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', () => {
    for (const f of atExit) {
      try {
        f();
      } catch {
        // A destination already closed has nothing left to write.
      }
    }
  });
}

/**
 * Creates the process logger: JSON lines to a file, or to stderr. Throws LogFileError when the file
 * exists and other users can read it (`ownFile`: a path the program chose itself is made private instead).
 */
export function createLogger(opts: { level?: string; file?: string; name?: string; ownFile?: boolean } = {}): Logger {
  // Written synchronously, a line as it comes (the call lines of one turn together, below): one
  // `write()`, no thread-pool round trip, nothing waiting in a buffer, so nothing to flush at exit and
  // no line overtaking another. (A buffered destination measures its whole pending buffer on every
  // write, which copies it, and its flush at exit retries a full disk forever.)
  // What cannot be written waits, up to 1 MiB (then new lines are dropped).
  // A log file is opened here (0600, folders 0700; refused when other users can read it: log-file.ts).
  const destination = pino.destination({ dest: opts.file ? openLogFile(opts.file, opts.ownFile) : 2, sync: true, maxLength: 1 << 20 });
  // A log that cannot be written (disk full) must not stop the agent: what failed is tried again with
  // the next line. Said once on stderr.
  let reported = false;
  destination.on('error', (e: Error) => {
    if (!reported) process.stderr.write(`aios-device: the log cannot be written: ${e.message}\n`);
    reported = true;
  });
  // The lines of one turn's finished calls go to the destination in one write (one system call per
  // turn). Any other line first writes the call lines waiting, so the order is kept.
  let batch = '';
  const direct = destination.write.bind(destination);
  const writeBatch = () => {
    const text = batch;
    batch = '';
    if (text) direct(text);
  };
  destination.write = (text: string) => {
    if (batch) writeBatch();
    return direct(text);
  };
  const base = { name: opts.name ?? 'aios-device', level: opts.level ?? 'info', base: { pid: process.pid } };
  const p = pino({ ...base, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination);
  const log = p as unknown as Logger;
  // pino's own line format, made directly: a call's line costs a tenth of a pino call (no redaction
  // pass, no serializers: its fields are fixed and hold no secret).
  const tail = `,"pid":${process.pid},"name":${JSON.stringify(base.name)}`;
  callLines.set(log, (level, l, msg) => {
    if (!p.isLevelEnabled(level)) return;
    if (!batch) queueMicrotask(writeBatch);
    batch += `{"level":${LEVELS[level]},"time":${Date.now()}${tail},"call_id":${JSON.stringify(l.call_id)},"function":${JSON.stringify(l.function)},"state":${JSON.stringify(l.state)},"duration_ms":${l.duration_ms ?? null}${
      l.error_type !== undefined ? `,"error_type":${JSON.stringify(l.error_type)}` : ''
    },"msg":${JSON.stringify(msg)}}\n`;
  });
  // At exit: the call lines still waiting, written once.
  const flush = () => {
    const text = batch;
    batch = '';
    if (text) writeSync((destination as unknown as { fd: number }).fd, text);
  };
  flushAtExit(flush);
  destination.once('close', () => atExit.delete(flush));
  return log;
}

/**
 * The writer of the one line per finished call for this logger: for a logger made by `createLogger`, a
 * direct write of the line in pino's format; for any other logger (tests, the tray's), its own methods.
 */
export function callLineWriter(log: Logger): CallLineWriter {
  return callLines.get(log) ?? ((level, line, msg) => log[level](line, msg));
}

/** A logger that drops everything (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' }) as unknown as Logger;
}
