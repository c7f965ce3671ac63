/** Dates, numbers and durations in the page's language (Intl, with the catalogue's locale). */
import { intlLocale } from './catalogue.js';

type Unit = 'second' | 'minute' | 'millisecond' | 'byte' | 'kilobyte' | 'megabyte';
const unit = (n: number, u: Unit, digits = 0): string =>
  new Intl.NumberFormat(intlLocale(), { style: 'unit', unit: u, unitDisplay: 'short', maximumFractionDigits: digits }).format(n);
const pair = (a: string, b: string): string => new Intl.ListFormat(intlLocale(), { style: 'narrow', type: 'unit' }).format([a, b]);

/** A point in time (ISO), short date and time to the second. */
export const formatTime = (iso: string): string => new Intl.DateTimeFormat(intlLocale(), { dateStyle: 'short', timeStyle: 'medium' }).format(new Date(iso));

/** A count, with the language's grouping. */
export const formatCount = (n: number): string => new Intl.NumberFormat(intlLocale()).format(n);

/** The time left: seconds under two minutes (what people count down), else minutes and seconds. */
export function formatCountdown(secs: number): string {
  if (secs < 120) return unit(secs, 'second');
  return pair(unit(Math.floor(secs / 60), 'minute'), unit(secs % 60, 'second'));
}

/** A duration: milliseconds under a second, else seconds (one decimal under a minute), else minutes and seconds. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return unit(ms, 'millisecond');
  if (ms < 60_000) return unit(ms / 1000, 'second', 1);
  return pair(unit(Math.floor(ms / 60_000), 'minute'), unit(Math.round((ms % 60_000) / 1000), 'second'));
}

/** A size in bytes (B, kB, MB: decimal units, as file managers show them). */
export function formatSize(bytes: number): string {
  const [n, u]: [number, Unit] = bytes < 1000 ? [bytes, 'byte'] : bytes < 1e6 ? [bytes / 1e3, 'kilobyte'] : [bytes / 1e6, 'megabyte'];
  return unit(n, u, 1);
}
