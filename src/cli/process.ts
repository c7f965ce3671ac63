/**
 * Process plumbing for the CLI: usage errors, clean shutdown on SIGTERM/SIGINT.
 */
import { readFileSync } from 'node:fs';
import { say } from './say.js';
import { SaidError } from '../i18n/said.js';

/** A mistake in how the command was called; printed without a stack, exit 64. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * An option's parser for a whole number from `min` to `max`: anything else ("abc", "1.5", "12ms", out
 * of range) is a usage error naming the flag, instead of NaN or a silently cut number.
 */
export function intOption(flag: string, min: number, max: number): (value: string) => number {
  return (value) => {
    const n = /^-?\d+$/.test(value.trim()) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(say('cli.usage.not_an_integer', { flag, min, max, value }));
    return n;
  };
}

/**
 * A file the user named (or `-`: stdin), as text; one that cannot be read is a sentence naming it and the
 * system's code (ENOENT, EACCES, EISDIR…), not Node's English message. Exit code as any other failure.
 */
export function readUserFile(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (e) {
    throw new SaidError({ key: 'cli.file.unreadable', params: { file, code: (e as NodeJS.ErrnoException).code ?? 'error' } }, { cause: e });
  }
}

/** Runs `stop` once on SIGTERM or SIGINT, then exits 0 (1 if stopping failed). */
export function onShutdownSignals(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (sig: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(say('cli.process.stopping', { signal: sig }) + '\n');
    stop().then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(say('cli.process.stop_failed', { error: (e as Error).message }) + '\n');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
