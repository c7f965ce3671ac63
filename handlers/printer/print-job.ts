/**
 * The steps of a print between the arguments and the backend: checking options against what the printer
 * says it supports, choosing the format to send (converting text and images when that is safe), and
 * waiting for a job to reach the state the caller asked for. No SDK import.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sleep } from './wait.js';
import { imageToPdf, sniffFormat, textToPdf, type DocFormat } from './convert.js';
import { TERMINAL_JOB_STATES } from './ipp/names.js';
import { PrinterFault, type JobInfo, type PrintOptions, type PrinterBackend, type PrinterSupports } from './model.js';

/** One schema-style violation (JSON Pointer into the arguments). */
export interface Violation {
  pointer: string;
  message: string;
}

const listed = (xs: string[] | undefined) => (xs && xs.length ? xs : undefined);

/** Options the printer says it cannot do, each naming what it can. Unknown capabilities are not held against a call. */
export function checkOptions(o: PrintOptions, s: PrinterSupports | undefined): Violation[] {
  if (!s) return [];
  const out: Violation[] = [];
  if (o.copies !== undefined && s.copies && (o.copies < s.copies.min || o.copies > s.copies.max)) out.push({ pointer: '/options/copies', message: `the printer takes ${s.copies.min} to ${s.copies.max} copies` });
  if (o.media && listed(s.media) && !s.media.includes(o.media)) out.push({ pointer: '/options/media', message: `the printer takes media ${s.media.join(', ')}` });
  if (o.sides && listed(s.sides) && !s.sides.includes(o.sides)) out.push({ pointer: '/options/sides', message: `the printer takes sides ${s.sides.join(', ')}` });
  if (o.color_mode && o.color_mode !== 'auto' && listed(s.color_modes) && !s.color_modes.includes(o.color_mode)) out.push({ pointer: '/options/color_mode', message: `the printer takes color modes ${s.color_modes.join(', ')}` });
  if (o.orientation && listed(s.orientations) && !s.orientations.includes(o.orientation)) out.push({ pointer: '/options/orientation', message: `the printer takes orientations ${s.orientations.join(', ')}` });
  if (o.page_ranges?.length && s.page_ranges === false) out.push({ pointer: '/options/page_ranges', message: 'the printer does not take page ranges' });
  o.page_ranges?.forEach((r, i) => {
    if (r.from > r.to) out.push({ pointer: `/options/page_ranges/${i}`, message: 'from is after to' });
  });
  return out;
}

/** A document ready to send. */
export interface PreparedDocument {
  file: string;
  size: number;
  format: DocFormat;
  /** Set when the handler converted the document (e.g. text/plain → application/pdf). */
  converted_from?: DocFormat;
}

/** Picks what to send and converts when the printer does not take the document's own format. */
export async function prepareDocument(
  doc: { file: string; size: number; isText: boolean },
  formats: string[],
  options: PrintOptions,
  conv: { maxConvertBytes: number; font?: string; dir: string; title?: string },
): Promise<PreparedDocument> {
  const sniffed: DocFormat | undefined = doc.isText ? 'text/plain' : await sniffFormat(doc.file);
  if (!sniffed) throw new PrinterFault('invalid_arguments', 'The document is not a PDF, PNG, JPEG or UTF-8 text; send printer-language bytes with printer.print_raw instead.', { reason: 'unknown_format' });
  const takes = (f: string) => formats.length === 0 || formats.includes(f);
  const takesPdf = formats.includes('application/pdf');
  // Text always becomes a PDF when the printer takes one: a printer's own text/plain rendering knows
  // neither the charset nor a Chinese font. Images go as they are when the printer takes them.
  const convert = sniffed === 'text/plain' ? takesPdf : sniffed !== 'application/pdf' && !takes(sniffed) && takesPdf;
  if (!convert) {
    if (!takes(sniffed)) {
      throw new PrinterFault('invalid_arguments', `The printer does not take ${sniffed} and it cannot be converted for it; it takes ${formats.join(', ')}.`, { reason: 'format_not_supported', format: sniffed, printer_formats: formats });
    }
    return { file: doc.file, size: doc.size, format: sniffed };
  }
  if (doc.size > conv.maxConvertBytes) {
    throw new PrinterFault('invalid_arguments', `The ${sniffed} document is too large to convert to PDF on this device (limit ${conv.maxConvertBytes} bytes); send a PDF.`, { reason: 'too_large_to_convert', size: doc.size, limit: conv.maxConvertBytes });
  }
  const out = path.join(conv.dir, 'converted.pdf');
  const landscape = options.orientation?.includes('landscape');
  if (sniffed === 'text/plain') {
    const text = await fs.promises.readFile(doc.file, 'utf8');
    await textToPdf(text, out, { ...(options.media ? { media: options.media } : {}), ...(landscape ? { landscape } : {}), ...(conv.font ? { font: conv.font } : {}), ...(conv.title ? { title: conv.title } : {}) });
  } else {
    await imageToPdf(doc.file, out, { ...(options.media ? { media: options.media } : {}), ...(options.orientation ? { orientation: options.orientation } : {}), ...(conv.title ? { title: conv.title } : {}) });
  }
  return { file: out, size: (await fs.promises.stat(out)).size, format: 'application/pdf', converted_from: sniffed };
}

/** Polls a job until it ends (completed, canceled or aborted), reporting each change. */
export async function waitForEnd(backend: PrinterBackend, job: JobInfo, pollMs: number, signal: AbortSignal, onChange: (j: JobInfo) => void): Promise<JobInfo> {
  let last = job;
  onChange(job);
  let key = `${job.state}|${job.reasons.join(',')}|${job.pages_completed ?? ''}`;
  while (!TERMINAL_JOB_STATES.includes(last.state as (typeof TERMINAL_JOB_STATES)[number])) {
    await sleep(pollMs, signal);
    last = { ...last, ...(await backend.job(job.job_id!, signal)) };
    const k = `${last.state}|${last.reasons.join(',')}|${last.pages_completed ?? ''}`;
    if (k !== key) onChange(last);
    key = k;
  }
  return last;
}
