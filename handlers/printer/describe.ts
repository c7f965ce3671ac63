/**
 * The prompt sentences: a message key of i18n/<locale>.json and its parameters, built from the validated
 * arguments ("Print invoice.pdf (3 pages, 2 copies) on front-desk"). Page counts are known for inline
 * PDFs; for a blob the prompt gives the size (the blob is fetched only after the user agrees).
 */
import { countPdfPages } from './convert.js';

/** A message key and its parameters. */
export interface Message {
  key: string;
  params: Record<string, string | number>;
}

/** "1.2 MB" style sizes (decimal units, as file managers show them). */
export function formatSize(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ['KB', 'MB', 'GB'];
  let x = n / 1000;
  let i = 0;
  while (x >= 1000 && i < units.length - 1) {
    x /= 1000;
    i++;
  }
  return `${x >= 10 ? Math.round(x) : Math.round(x * 10) / 10} ${units[i]}`;
}

/** The document part of print arguments. */
export interface DocArgs {
  blob?: { size: number; media_type: string };
  data?: string;
  text?: string;
  document_name?: string;
}

/** Bytes of the document as given (before any conversion). */
export function documentSize(a: DocArgs): number {
  if (a.blob) return a.blob.size;
  if (a.data !== undefined) return Buffer.byteLength(a.data, 'base64');
  return Buffer.byteLength(a.text ?? '', 'utf8');
}

function defaultName(a: DocArgs): string {
  if (a.text !== undefined) return 'text.txt';
  const mt = a.blob?.media_type ?? (a.data !== undefined ? sniffInline(a.data) : undefined);
  if (mt === 'image/png') return 'image.png';
  if (mt === 'image/jpeg') return 'image.jpg';
  if (mt === 'application/pdf') return 'document.pdf';
  return 'document';
}

function sniffInline(data: string): string | undefined {
  const head = Buffer.from(data.slice(0, 16), 'base64');
  if (head.subarray(0, 5).toString('latin1') === '%PDF-') return 'application/pdf';
  if (head[0] === 0x89 && head[1] === 0x50) return 'image/png';
  if (head[0] === 0xff && head[1] === 0xd8) return 'image/jpeg';
  return undefined;
}

/** The prompt for printer.print. */
export function describePrint(a: DocArgs & { copies?: number }, printer: string): Message {
  const document = a.document_name ?? defaultName(a);
  const copies = a.copies ?? 1;
  const pages = a.data !== undefined && sniffInline(a.data) === 'application/pdf' ? countPdfPages(Buffer.from(a.data, 'base64')) : undefined;
  const c = copies === 1 ? 'copies_one' : 'copies_many';
  const p = pages === undefined ? 'size' : pages === 1 ? 'pages_one' : 'pages_many';
  return { key: `printer.print.${p}.${c}`, params: { document, printer, copies, ...(pages !== undefined ? { pages } : {}), size: formatSize(documentSize(a)) } };
}

/** The prompt for printer.print_raw. */
export function describeRaw(a: DocArgs, printer: string): Message {
  return { key: 'printer.print_raw', params: { document: a.document_name ?? 'data', size: formatSize(documentSize(a)), printer } };
}

/** Renders a message with a flat catalogue ({name} placeholders). */
export function render(catalogue: Record<string, string>, m: Message): string {
  const t = catalogue[m.key] ?? m.key;
  return t.replace(/\{(\w+)\}/g, (all, k: string) => (k in m.params ? String(m.params[k]) : all));
}
