/**
 * The command line's words in the user's locale (LC_ALL, LC_MESSAGES, LANG): `say(key, params)` renders a
 * `cli.` string from src/i18n/cli.ts. Error lines keep the wire's `type` and English `message` and add the
 * error's name in the user's language.
 */
import { localeFromEnv, strings, type MessageParams } from '../i18n/index.js';
import type { CliKey } from '../i18n/cli.js';
import { ConfigError } from '../config/load.js';
import { personErrorText } from '../app/error-text.js';
import { errorMessage } from '../control/words.js';

/** A command-line sentence in the user's locale. */
export function say(key: CliKey, params?: MessageParams): string {
  return strings.render(params ? { key, params } : { key }, localeFromEnv());
}

/**
 * "type: message" in English (the wire's English sentence, the most precise one); in Chinese the error's
 * name, its type and what it means from the core catalogue, with its params (the path, the limit, the
 * versions), never the English wire message.
 */
export function errorLine(e: { type: string; message: string; details?: unknown }): string {
  const locale = localeFromEnv();
  const named = `cli.error.${e.type}`;
  const typeText = strings.has(named) ? strings.render({ key: named }, locale) : e.type;
  const explanation = strings.render(errorMessage(e, (k) => strings.has(k)), locale);
  return say('cli.error.line', { type: e.type, message: e.message, type_text: typeText, explanation });
}

/**
 * An error's sentence in the user's locale, on one line: a config file's problems after the file's name,
 * an adapter problem with its violations, a catalogue message (`said`) rendered, anything else as its message.
 */
export function sayError(e: unknown): string {
  const text = personErrorText(e, localeFromEnv());
  return e instanceof ConfigError ? `${say('cli.main.config_error', { file: e.file })} ${text}` : text;
}
