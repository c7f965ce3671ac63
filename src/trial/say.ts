/**
 * The trial's sentences as catalogue messages (src/i18n/trial.ts, en and zh-CN): checks return them, and
 * the run renders them in the report's language (`--lang`, else the locale). What comes from elsewhere (a
 * device's error message, a path, an id) is a parameter, as it came.
 */
import { strings, type Locale, type Message, type MessageParams } from '../i18n/index.js';
import type { TrialKey } from '../i18n/trial.js';

/** A trial message (its key checked at compile time). */
export function m(key: TrialKey, params?: MessageParams): Message {
  return params ? { key, params } : { key };
}

/** `msg` in `lang`. */
export function render(msg: Message, lang: Locale): string {
  return strings.render(msg, lang);
}

/** A message's parameters rendered in `lang` (nested messages as text), for the JSON report. */
export function renderParams(msg: Message, lang: Locale): Record<string, string> {
  return Object.fromEntries(Object.entries(msg.params ?? {}).map(([k, v]) => [k, typeof v === 'object' ? render(v, lang) : String(v)]));
}

/** An error the trial itself raises, with its sentence in the catalogue (the report renders it in its language). */
export class TrialError extends Error {
  constructor(readonly msg: Message) {
    super(render(msg, 'en'));
  }
}
