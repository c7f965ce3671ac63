/**
 * The core's own sentences (src/), in every locale. Handlers keep theirs in handlers/<name>/i18n/*.json.
 * The tables are JSON (src/i18n/core/<locale>.json, the format of the handlers' and the window's
 * catalogues); the zh-CN one is typed against the en one, so a key missing from zh-CN fails the type-check (test/sdk/catalogues.test.ts also refuses a key only in zh-CN).
 */
import type { Messages } from './catalogue.js';
import enTable from './core/en.json' with { type: 'json' };
import zhTable from './core/zh-CN.json' with { type: 'json' };

/** English core strings. */
export const en = enTable satisfies Messages;

/** A core string key. */
export type CoreKey = keyof typeof en;

/** Simplified Chinese core strings. */
export const zhCN: Record<CoreKey, string> = zhTable;
