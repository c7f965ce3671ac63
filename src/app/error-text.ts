/**
 * An error's sentence for a person, in their locale, wherever it is shown (the command line, the tray's
 * dialogs): a config file's problems with their schema violations, an adapter problem with its
 * violations, any other catalogue message (`said`), else the error's own (English) message.
 */
import { ConfigError } from '../config/load.js';
import { AdapterProblem, renderProblem, renderViolation } from '../discovery/adapter-problem.js';
import { strings, type Locale } from '../i18n/index.js';
import { errorText, saidOf } from '../i18n/said.js';
import { errorMessage } from '../control/words.js';

/**
 * The error's sentence in `locale` (a ConfigError: its problems only, without the file's name). Outside
 * English, a wire error without a catalogue message (one with a `type` the core catalogue explains) says
 * what its type means, with its params (the path, the limit, the versions), not its English message.
 */
export function personErrorText(e: unknown, locale: Locale): string {
  if (e instanceof ConfigError) return e.say(locale, renderViolation).join(strings.render({ key: 'core.schema.separator' }, locale));
  if (e instanceof AdapterProblem) return renderProblem(e.said, locale);
  const type = (e as { type?: unknown } | null | undefined)?.type;
  if (locale !== 'en' && !saidOf(e) && typeof type === 'string' && strings.has(`core.error.${type}`)) {
    return strings.render(errorMessage(e as { type: string; details?: unknown }, (k) => strings.has(k)), locale);
  }
  return errorText(e, locale);
}
