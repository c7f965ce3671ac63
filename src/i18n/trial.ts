/**
 * The trial report's words (src/trial/report.ts, `aios-device trial --lang`), in every locale. Verdict
 * names and check ids are stable and stay as they are; what a person reads around them is here. The checks'
 * own words are keyed by kind: titles `trial.t.*`, evidence labels `trial.e.*`, messages `trial.m.*` (what came
 * from elsewhere is a parameter). The tables are JSON (src/i18n/trial/<locale>.json, the format of the
 * handlers' and the window's catalogues); the zh-CN one is typed against the en one, so a key missing from
 * zh-CN fails the type-check (test/sdk/catalogues.test.ts also refuses a key only in zh-CN).
 */
import type { Messages } from './catalogue.js';
import enTable from './trial/en.json' with { type: 'json' };
import zhTable from './trial/zh-CN.json' with { type: 'json' };

/** English trial report strings. */
export const trialEn = enTable satisfies Messages;

/** A key of the trial report's catalogue. */
export type TrialKey = keyof typeof trialEn;

/** Simplified Chinese trial report strings. */
export const trialZh: Record<TrialKey, string> = zhTable;
