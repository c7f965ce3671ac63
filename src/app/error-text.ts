/**
 * An error's sentence for a person, in their locale, wherever it is shown (the command line, the tray's
 * dialogs): a config file's problems with their schema violations, an adapter problem with its
 * violations, any other catalogue message (`said`), else the error's own (English) message.
 */
import { ConfigError } from '../config/load.js';
import { AdapterProblem, renderProblem, renderViolation } from '../discovery/adapter-problem.js';
import { strings, type Locale } from '../i18n/index.js';
import { errorText } from '../i18n/said.js';

/** The error's sentence in `locale` (a ConfigError: its problems only, without the file's name). */
export function personErrorText(e: unknown, locale: Locale): string {
  if (e instanceof ConfigError) return e.say(locale, renderViolation).join(strings.render({ key: 'core.schema.separator' }, locale));
  if (e instanceof AdapterProblem) return renderProblem(e.said, locale);
  return errorText(e, locale);
}
