/**
 * The handler's sentences, from its catalogues (i18n/en.json, i18n/zh-CN.json). Until the kit renders
 * message keys per locale, the agent shows the English sentence; `render` is that renderer. The JSON is
 * imported (not read from disk) so the build copies it next to the compiled handler.
 */
import en from './i18n/en.json' with { type: 'json' };
import zhCN from './i18n/zh-CN.json' with { type: 'json' };

/** The catalogues by locale. */
export const CATALOGUES: Readonly<Record<string, Readonly<Record<string, string>>>> = { en, 'zh-CN': zhCN };

/** A message key and its parameters (what the kit's describe() returns); a parameter may be a message (rendered in the same locale). */
export interface Message {
  key: string;
  params: Record<string, string | number | Message>;
}

/** Renders a message in a locale (English when the locale or key is missing). */
export function render(m: Message, locale = 'en'): string {
  const text = CATALOGUES[locale]?.[m.key] ?? CATALOGUES['en']![m.key] ?? m.key;
  return text.replace(/\{(\w+)\}/g, (all, k: string) => {
    if (!(k in m.params)) return all;
    const v = m.params[k]!;
    return typeof v === 'object' ? render(v, locale) : String(v);
  });
}
