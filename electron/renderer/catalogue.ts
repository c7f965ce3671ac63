/**
 * The string catalogues of the window's pages (index.html, capture.html): en.json and zh-CN.json next to
 * them, in the kit's flat `{ "ui.key": "text with {param}" }` format, one module for both pages.
 * `?lang=pseudo` renders every string as ⟦…⟧ (the tests' check that no visible text bypasses the catalogue).
 */

import type { WordsMessage } from '../../src/control/words.js';

/** The languages the page offers, and the pseudo-locale of the tests. */
export type PageLocale = 'en' | 'zh-CN' | 'pseudo';
/** Parameters of a catalogue sentence (`{name}` placeholders). */
export type Params = Record<string, string | number>;
type Table = Record<string, string>;

/** Where the tray page keeps the language chosen (same origin for both pages, so the same storage). */
export const LOCALE_KEY = 'aios-locale';
/**
 * `table`/`en`: the page's own catalogue; `agent`: the agent's sentences (core and handlers,
 * control.catalogue.get) in the page's language, for what the agent sends as keys.
 */
const state: { locale: PageLocale; table: Table; en: Table; agent: Table } = { locale: 'en', table: {}, en: {}, agent: {} };

/** The locale: ?lang=…, else the one chosen before, else the browser's/OS's first language (Chinese → zh-CN, else en). */
export function pickLocale(): PageLocale {
  const asked = new URLSearchParams(location.search).get('lang');
  if (asked === 'en' || asked === 'zh-CN' || asked === 'pseudo') return asked;
  const saved = localStorage.getItem(LOCALE_KEY);
  if (saved === 'en' || saved === 'zh-CN') return saved;
  const tag = navigator.languages?.[0] || navigator.language || 'en';
  return /^zh([-_]|$)/i.test(tag) ? 'zh-CN' : 'en';
}

async function fetchTable(name: string): Promise<Table> {
  const res = await fetch(`${name}.json`, { cache: 'no-store', credentials: 'omit' });
  if (!res.ok) throw new Error(`catalogue ${name}: ${res.status}`);
  return (await res.json()) as Table;
}

/** Loads `locale`'s catalogue (with en as the fallback of a missing key). */
export async function loadLocale(locale: PageLocale): Promise<void> {
  const en = await fetchTable('en');
  let table = en;
  if (locale === 'zh-CN') table = await fetchTable('zh-CN');
  if (locale === 'pseudo') table = Object.fromEntries(Object.entries(en).map(([k, v]) => [k, `⟦${v}⟧`]));
  Object.assign(state, { locale, table, en });
}

/**
 * Takes the agent's sentences in the page's language (the pseudo-locale wraps them like its own); `{}`
 * from an agent that serves none (its functions then show the descriptor's English words).
 */
export function setAgentTable(messages: Table): void {
  state.agent = state.locale === 'pseudo' ? Object.fromEntries(Object.entries(messages).map(([k, v]) => [k, `⟦${v}⟧`])) : messages;
}

/** The language to ask the agent's sentences in. */
export const agentLocale = (): 'zh-CN' | 'en' => (state.locale === 'zh-CN' ? 'zh-CN' : 'en');

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const template = (key: string): string => state.table[key] ?? state.agent[key] ?? state.en[key] ?? key;

/** The sentence for `key` with `{param}`s filled; fallback en, then the key itself (the page's or the agent's key). */
export function t(key: string, params: Params = {}): string {
  return template(key).replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(params, name) ? String(params[name]) : whole));
}

/** `key`, or its `_one` variant when `count` is 1 and the catalogue has one ("1 recent call", not "1 recent calls"). */
export const countKey = (key: string, count: number): string => (count === 1 && has(`${key}_one`) ? `${key}_one` : key);

/** A message the agent sent (key + params, nested messages in params), in the page's language. */
export function tm(m: WordsMessage): string {
  const params = m.params ?? {};
  return template(m.key).replace(PLACEHOLDER, (whole, name: string) => {
    if (!Object.hasOwn(params, name)) return whole;
    const v = params[name]!;
    return typeof v === 'object' ? tm(v) : String(v);
  });
}

/** True when the page's en catalogue or the agent's holds `key`. */
export const has = (key: string): boolean => Object.hasOwn(state.en, key) || Object.hasOwn(state.agent, key);

/** The locale loaded last. */
export const currentLocale = (): PageLocale => state.locale;

/** The Intl locale for dates and numbers (the pseudo-locale formats as English). */
export const intlLocale = (): 'zh-CN' | 'en' => (state.locale === 'zh-CN' ? 'zh-CN' : 'en');

/** Puts the catalogue's text in every `data-i18n` element of the page. */
export function applyStaticStrings(): void {
  for (const el of document.querySelectorAll<HTMLElement>('[data-i18n]')) el.textContent = t(el.dataset['i18n'] ?? '');
}

/**
 * The sentence for `key` as nodes, for an element's `replaceChildren`: the params named in `code` as
 * `<code data-value>` elements (ids, error codes: what a person may copy, never translated), a param given
 * as nodes put in as they are, the rest as text.
 */
export function tNodes(key: string, params: Record<string, string | number | Node[]>, code: readonly string[] = []): Node[] {
  const out: Node[] = [];
  let text = '';
  let last = 0;
  const tpl = template(key);
  for (const m of tpl.matchAll(PLACEHOLDER)) {
    const name = m[1]!;
    text += tpl.slice(last, m.index);
    last = m.index + m[0].length;
    const v = params[name];
    if (v === undefined) text += m[0];
    else if (Array.isArray(v)) {
      if (text) out.push(document.createTextNode(text));
      text = '';
      out.push(...v);
    } else if (code.includes(name)) {
      if (text) out.push(document.createTextNode(text));
      text = '';
      const c = document.createElement('code');
      c.dataset['value'] = '';
      c.textContent = String(v);
      out.push(c);
    } else text += String(v);
  }
  text += tpl.slice(last);
  if (text) out.push(document.createTextNode(text));
  return out;
}
