/**
 * A built-in function's title and one-line description in a person's language: from its handler's
 * catalogue (`<handler>.function.<id>.title` / `.description`, src/control/words.ts), else the
 * descriptor's English `name` / `description` (a third-party adapter's own words).
 */
import { existsSync, readdirSync } from 'node:fs';
import { functionKeys } from '../control/words.js';
import { catalogueDirs, loadHandlerCatalogue } from './instance.js';
import { BUILTIN_HANDLERS_DIR } from '../version.js';
import { strings, type Locale, type Message } from '../i18n/index.js';

let builtinNames: string[] | undefined;

/**
 * Loads every built-in handler's catalogue into the process's catalogue (once), for a process that runs no
 * agent (the command line's `functions`), and returns the handlers' names.
 */
export function loadBuiltinCatalogues(dir = BUILTIN_HANDLERS_DIR): readonly string[] {
  if (builtinNames) return builtinNames;
  const names = existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name) : [];
  builtinNames = names.filter((n) => loadHandlerCatalogue(n, catalogueDirs(n, dir)));
  return builtinNames;
}

/** The catalogue keys of a function's title and description, when its handler's catalogue has them. */
export function functionWordKeys(id: string, source?: string): { title: string; description: string } | undefined {
  const owners = source ? [source] : loadBuiltinCatalogues();
  for (const h of owners) {
    const k = functionKeys(h, id);
    if (strings.has(k.title)) return strings.has(k.description) ? k : { title: k.title, description: '' };
  }
  return undefined;
}

/** A function's title and description in `locale` (its descriptor's words when no catalogue has it). */
export function functionWords(f: { id: string; name: string; description: string }, locale: Locale, source?: string): { title: string; description: string } {
  const k = functionWordKeys(f.id, source);
  const render = (key: string, fallback: string): string => (key ? strings.render({ key } satisfies Message, locale) : fallback);
  return { title: k ? render(k.title, f.name) : f.name, description: k ? render(k.description, f.description) : f.description };
}
