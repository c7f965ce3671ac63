/**
 * The language of a bridge page, per request: the page's switch (`?lang=en|zh-CN`, remembered in a cookie for
 * the pages under `/device`), else the cookie, else the browser's `Accept-Language` (in its order of
 * preference: the first tag that is Chinese or English decides), else English.
 */
import type { IncomingMessage } from 'node:http';
import Negotiator from 'negotiator';
import { isLocale, strings, type Locale, type MessageParams } from '../../i18n/index.js';
import type { BridgeKey } from '../../i18n/bridge.js';

/** The cookie that remembers the page's language switch. */
export const LANG_COOKIE = 'aios_lang';

/** Renders a bridge page string in one locale. */
export type PageText = (key: BridgeKey, params?: MessageParams) => string;

/** A page's language and its renderer. */
export interface PageLocale {
  locale: Locale;
  t: PageText;
  /** A `Set-Cookie` value when the request switched the language, else undefined. */
  setCookie?: string;
}

/** The locale an `Accept-Language` header asks for first among the ones the bridge has. */
export function localeFromAcceptLanguage(header: string | undefined): Locale {
  if (!header) return 'en';
  for (const tag of new Negotiator({ headers: { 'accept-language': header } }).languages()) {
    if (/^zh(-|$)/i.test(tag)) return 'zh-CN';
    if (/^en(-|$)/i.test(tag)) return 'en';
  }
  return 'en';
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** The renderer for one locale. */
export function pageText(locale: Locale): PageText {
  return (key, params) => strings.render(params ? { key, params } : { key }, locale);
}

/** Chooses the language of the page this request asks for. */
export function pageLocale(req: IncomingMessage, url?: URL): PageLocale {
  const asked = url?.searchParams.get('lang') ?? undefined;
  if (asked && isLocale(asked)) {
    return { locale: asked, t: pageText(asked), setCookie: `${LANG_COOKIE}=${asked}; Path=/device; SameSite=Lax; Max-Age=31536000` };
  }
  const remembered = cookieValue(req.headers.cookie, LANG_COOKIE);
  const locale = remembered && isLocale(remembered) ? remembered : localeFromAcceptLanguage(req.headers['accept-language']);
  return { locale, t: pageText(locale) };
}
