/**
 * The sentences of serial's prompts and activity list, from the handler's catalogue. Until the kit
 * renders catalogue keys per locale, they are rendered here in English.
 */
import en from './i18n/en.json' with { type: 'json' };

/** A catalogue key and its parameters (what the kit's describe() returns). */
export interface Sentence {
  key: keyof typeof en;
  params: Record<string, string | number | undefined>;
}

/** Renders a sentence with the English catalogue. */
export function renderEn(s: Sentence): string {
  return en[s.key].replace(/\{(\w+)\}/g, (m, k: string) => (k in s.params ? String(s.params[k]) : m));
}

/** "12 bytes", from the catalogue. */
export function bytesParam(n: number): string {
  return renderEn({ key: 'serial.bytes', params: { n } });
}
