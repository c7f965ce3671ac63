/**
 * Errors that reach a person (start-up, config, data folder, keychain…) carry their sentence as a catalogue
 * message: `message` stays its English text (logs, tests, other programs), and whoever prints the error for
 * a person renders `said` in that person's locale. The CLI's last-resort handler does so for any error that
 * has one, so deep code needs no knowledge of the CLI.
 */
import { strings, type Locale, type Message } from './index.js';

/** An error whose sentence is a catalogue message. */
export class SaidError extends Error {
  /** The sentence as a message, to render in the reader's locale (`message` is its English text). */
  readonly said: Message;
  constructor(said: Message, options?: ErrorOptions) {
    super(strings.render(said, 'en'), options);
    this.said = said;
    this.name = 'SaidError';
  }
}

/**
 * The catalogue message an error carries (a `said` with a key), if any: SaidError, LoginError and the like.
 * An adapter problem's `said` also lists schema violations that only its own renderer says: it is left to
 * that renderer (src/discovery/adapter-problem.ts), and here its English message is used.
 */
export function saidOf(e: unknown): Message | undefined {
  const said = (e as { said?: unknown } | null | undefined)?.said;
  return plainMessage(said) ? said : undefined;
}

/** A message the catalogue renders alone: a key, and no schema violations in it or in a message it nests. */
function plainMessage(m: unknown): m is Message {
  if (!m || typeof m !== 'object' || typeof (m as Message).key !== 'string' || 'violations' in m || 'more' in m) return false;
  return Object.values((m as Message).params ?? {}).every((v) => typeof v !== 'object' || plainMessage(v));
}

/** An error's sentence in `locale`: its catalogue message when it has one, else its (English) message. */
export function errorText(e: unknown, locale: Locale): string {
  const said = saidOf(e);
  if (said) return strings.render(said, locale);
  return e instanceof Error ? e.message : String(e);
}
