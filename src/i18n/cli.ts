/**
 * The command line's sentences (src/cli/), in every locale; rendered by `say()` in src/cli/say.ts in the
 * user's locale (LC_ALL, LC_MESSAGES, LANG). Wire fields (an error's `type` and `message`) are printed as
 * they came: the words around them are localised, and `cli.error.<type>` names the error in the user's
 * language. `cli.help.*` is the `--help` of every command and commander's own words (titles, "(default: …)",
 * parse errors), used through src/cli/localised-command.ts. The tables are JSON (src/i18n/cli/<locale>.json,
 * the format of the handlers' and the window's catalogues); the zh-CN one is typed against the en one, so a
 * key missing from zh-CN fails the type-check (test/sdk/catalogues.test.ts also refuses a key only in zh-CN).
 */
import type { Messages } from './catalogue.js';
import enTable from './cli/en.json' with { type: 'json' };
import zhTable from './cli/zh-CN.json' with { type: 'json' };

/** English command-line strings. */
export const cliEn = enTable satisfies Messages;

/** A command-line string key. */
export type CliKey = keyof typeof cliEn;

/** Simplified Chinese command-line strings. */
export const cliZh: Record<CliKey, string> = zhTable;
