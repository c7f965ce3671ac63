/**
 * String catalogues: every sentence a person sees, per locale. Flat `{ "key": "text with {param}" }` maps,
 * keys namespaced by owner (`core.` for src/, `<handler>.` for handlers/<handler>/i18n). Rendering falls
 * back zh-CN → en → the key itself, so a missing translation shows English, never nothing.
 *
 * A small module rather than a library: the needs are flat keys, `{param}` interpolation and no plurals
 * (sentences are written to avoid them), and no i18n library is installed in this project.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The locales the catalogues exist in; `en` is the fallback of every other. */
export const LOCALES = ['en', 'zh-CN'] as const;
/** One of LOCALES. */
export type Locale = (typeof LOCALES)[number];
/** A flat catalogue: key → template with `{param}` placeholders. */
export type Messages = Readonly<Record<string, string>>;
/**
 * Parameters of a message: text, numbers, or other messages (rendered in the same locale, e.g. a
 * "report.docx in Documents" part inside "Overwrite {target}").
 */
export type MessageParams = Readonly<Record<string, string | number | Message>>;
/** A message to render: a catalogue key and its parameters. */
export interface Message {
  readonly key: string;
  readonly params?: MessageParams;
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** The `{param}` names a template uses, sorted and unique. */
export function placeholders(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].map((m) => m[1]!))].sort();
}

/**
 * Fills `{param}`s (`sub` renders a nested message); a placeholder without a value stays visible as
 * `{param}` (a defect, but readable).
 */
export function interpolate(template: string, params: MessageParams = {}, sub: (m: Message) => string = (m) => m.key): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    if (!Object.hasOwn(params, name)) return whole;
    const v = params[name]!;
    return typeof v === 'object' ? sub(v) : String(v);
  });
}

/** True for a supported locale name. */
export function isLocale(s: string): s is Locale {
  return (LOCALES as readonly string[]).includes(s);
}

/**
 * The locale for a language tag or POSIX locale (`zh_CN.UTF-8`, `zh-Hans`, `en-GB`): Chinese → zh-CN,
 * anything else → en.
 */
export function toLocale(tag: string | undefined): Locale {
  if (!tag) return 'en';
  return /^zh([-_]|$)/i.test(tag) ? 'zh-CN' : 'en';
}

/** The user's locale from the environment (LC_ALL, LC_MESSAGES, LANG; then the ICU default). */
export function localeFromEnv(env: NodeJS.ProcessEnv = process.env): Locale {
  const tag = env['LC_ALL'] || env['LC_MESSAGES'] || env['LANG'];
  if (tag && tag !== 'C' && tag !== 'POSIX') return toLocale(tag);
  return toLocale(Intl.DateTimeFormat().resolvedOptions().locale);
}

/** Messages per locale, from any number of owners. */
export class Catalogue {
  private readonly byLocale = new Map<Locale, Map<string, string>>(LOCALES.map((l) => [l, new Map()]));

  /**
   * Adds an owner's messages for one locale. Every key must start with `<namespace>.`: an owner cannot
   * override another's sentences.
   */
  add(namespace: string, locale: Locale, messages: Messages): void {
    const table = this.byLocale.get(locale)!;
    for (const [key, text] of Object.entries(messages)) {
      if (!key.startsWith(namespace + '.')) throw new Error(`catalogue ${namespace}/${locale}: key "${key}" must start with "${namespace}."`);
      if (typeof text !== 'string') throw new Error(`catalogue ${namespace}/${locale}: "${key}" is not a string`);
      table.set(key, text);
    }
  }

  /** True when `key` exists in the `en` catalogue. */
  has(key: string): boolean {
    return this.byLocale.get('en')!.has(key);
  }

  /**
   * Every key `include` accepts with its template in `locale` (en where `locale` has none): the table a
   * screen renders from in its own language (control.catalogue.get).
   */
  table(locale: Locale, include: (key: string) => boolean = () => true): Record<string, string> {
    const out: Record<string, string> = {};
    const own = this.byLocale.get(locale)!;
    for (const [key, text] of this.byLocale.get('en')!) if (include(key)) out[key] = own.get(key) ?? text;
    return out;
  }

  /** The sentence for `msg` in `locale` (fallback en, then the key itself). */
  render(msg: Message, locale: Locale = 'en'): string {
    const template = this.byLocale.get(locale)!.get(msg.key) ?? this.byLocale.get('en')!.get(msg.key) ?? msg.key;
    return interpolate(template, msg.params, (m) => this.render(m, locale));
  }
}

/** Reads `<dir>/<locale>.json` for each locale that has a file; throws on a file that is not a flat string map. */
export function readCatalogueDir(dir: string): Partial<Record<Locale, Messages>> {
  const out: Partial<Record<Locale, Messages>> = {};
  for (const locale of LOCALES) {
    const file = join(dir, `${locale}.json`);
    if (!existsSync(file)) continue;
    const data = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (!data || typeof data !== 'object' || Array.isArray(data) || Object.values(data).some((v) => typeof v !== 'string')) {
      throw new Error(`${file}: a catalogue is a flat JSON object of strings`);
    }
    out[locale] = data as Messages;
  }
  return out;
}
