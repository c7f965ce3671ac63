/**
 * The handler's sentences, from its catalogues (i18n/en.json, i18n/zh-CN.json). Until the kit renders
 * message keys per locale, the agent shows the English sentence; `render` is that renderer.
 */
import { readFileSync } from 'node:fs';

const load = (locale: string): Record<string, string> => JSON.parse(readFileSync(new URL(`./i18n/${locale}.json`, import.meta.url), 'utf8')) as Record<string, string>;

/** The catalogues by locale. */
export const CATALOGUES: Readonly<Record<string, Record<string, string>>> = { en: load('en'), 'zh-CN': load('zh-CN') };

/** A message key and its parameters (what the kit's describe() returns). */
export interface Message {
  key: string;
  params: Record<string, string | number>;
}

/** Renders a message in a locale (English when the locale or key is missing). */
export function render(m: Message, locale = 'en'): string {
  const text = CATALOGUES[locale]?.[m.key] ?? CATALOGUES['en']![m.key] ?? m.key;
  return text.replace(/\{(\w+)\}/g, (all, k: string) => (k in m.params ? String(m.params[k]) : all));
}
