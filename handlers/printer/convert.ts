/**
 * Document formats: recognising what a file is, counting a PDF's pages for the prompt, and the two safe
 * conversions (plain text → PDF in a font that covers Chinese, PNG/JPEG → a PDF page with the image
 * scaled to fit). pdfkit does the PDF writing; fonts are embedded as subsets.
 */
import fs from 'node:fs';
import type PDFKitDocument from 'pdfkit';

/**
 * pdfkit, loaded on the first conversion: it costs ≈ 15 MB of memory and ≈ 0.3 s at import, which an
 * agent that prints nothing (or only PDFs) does not need to pay at start (issue 21, memory at rest).
 */
let pdfkit: Promise<typeof PDFKitDocument> | undefined;
const loadPdfKit = (): Promise<typeof PDFKitDocument> => (pdfkit ??= import('pdfkit').then((m) => m.default));
import { PrinterFault } from './model.js';

/** Formats the handler prints. */
export type DocFormat = 'application/pdf' | 'image/png' | 'image/jpeg' | 'text/plain';

/** Fonts tried, in order, when no `cjk_font` option is set: each covers Latin and CJK in one face. */
export const CJK_FONT_CANDIDATES: readonly { path: string; family?: string }[] = [
  // Debian/Ubuntu `fonts-wqy-microhei` (Apache-2.0 or GPL-3+ with font exception); a TrueType collection.
  { path: '/usr/share/fonts/truetype/wqy/wqy-microhei.ttc', family: 'WenQuanYiMicroHei' },
  // macOS
  { path: '/System/Library/Fonts/STHeiti Medium.ttc', family: 'STHeitiSC-Medium' },
  // Windows (Microsoft YaHei)
  { path: 'C:\\Windows\\Fonts\\msyh.ttc', family: 'MicrosoftYaHei' },
];

/** The format of a file from its first bytes; text is UTF-8 without NULs. */
export async function sniffFormat(file: string): Promise<DocFormat | undefined> {
  const fh = await fs.promises.open(file, 'r');
  try {
    const buf = Buffer.alloc(4096);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const head = buf.subarray(0, bytesRead);
    if (head.subarray(0, 5).toString('latin1') === '%PDF-') return 'application/pdf';
    if (head.length >= 8 && head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
    if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
    if (head.includes(0)) return undefined;
    // A cut in the middle of a multi-byte character at the 4 KiB edge is fine: only the start is judged.
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytesRead === buf.length ? head.subarray(0, head.length - 4) : head);
      return 'text/plain';
    } catch {
      return undefined;
    }
  } finally {
    await fh.close();
  }
}

/**
 * A PDF's page count, best effort, for the prompt ("3 pages"): the largest `/Count` of a page tree
 * node, else the number of `/Type /Page` objects. Undefined when neither is readable (compressed object
 * streams); the prompt then gives the size instead.
 */
export function countPdfPages(pdf: Buffer): number | undefined {
  const text = pdf.toString('latin1');
  let best = 0;
  for (const m of text.matchAll(/\/Type\s*\/Pages\b[^>]*?\/Count\s+(\d+)|\/Count\s+(\d+)[^>]*?\/Type\s*\/Pages\b/g)) best = Math.max(best, Number(m[1] ?? m[2]));
  if (best > 0) return best;
  const pages = text.match(/\/Type\s*\/Page(?![a-zA-Z])/g)?.length ?? 0;
  return pages > 0 ? pages : undefined;
}

/** countPdfPages of a file (skipped above `maxBytes`). */
export async function pdfPageCount(file: string, maxBytes = 64 * 1024 * 1024): Promise<number | undefined> {
  const st = await fs.promises.stat(file);
  if (st.size > maxBytes) return undefined;
  return countPdfPages(await fs.promises.readFile(file));
}

/** Page size in PDF points for a PWG media name (`iso_a4_210x297mm`, `na_letter_8.5x11in`); Letter otherwise. */
export function mediaSizePoints(media: string | undefined): [number, number] {
  const m = media ? /_(\d+(?:\.\d+)?)x(\d+(?:\.\d+)?)(mm|in)$/.exec(media) : null;
  if (!m) return [612, 792];
  const k = m[3] === 'in' ? 72 : 72 / 25.4;
  return [Number(m[1]) * k, Number(m[2]) * k];
}

/** Resolves the font used for text: the `cjk_font` option, else the first candidate present. */
export function findCjkFont(option?: string): { path: string; family?: string } | undefined {
  if (option) {
    const [p, family] = option.split('#');
    return fs.existsSync(p!) ? { path: p!, ...(family ? { family } : {}) } : undefined;
  }
  return CJK_FONT_CANDIDATES.find((c) => fs.existsSync(c.path));
}

/** Pipes the document to `out`; resolves when the file is complete (after the caller's doc.end()). */
function writePdf(doc: PDFKit.PDFDocument, out: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const ws = fs.createWriteStream(out, { mode: 0o600 });
    ws.on('finish', () => resolve());
    ws.on('error', reject);
    doc.on('error', reject);
    doc.pipe(ws);
  });
}

const MARGIN = 36; // half an inch: inside every printer's unprintable edge

/**
 * Plain text to PDF: one font that covers Latin and CJK (embedded as a subset), wrapped to the page,
 * form feeds start a new page. Without such a font, text outside Latin-1 is refused rather than printed
 * as empty boxes.
 */
export async function textToPdf(text: string, out: string, opts: { media?: string; landscape?: boolean; font?: string; title?: string }): Promise<void> {
  const font = findCjkFont(opts.font);
  if (!font && [...text].some((c) => c.codePointAt(0)! > 0xff)) {
    throw new PrinterFault('execution_failed', 'No font that covers this text is installed: install fonts-wqy-microhei (Debian/Ubuntu) or set handlers.printer.cjk_font.', { reason: 'no_font' });
  }
  let [w, h] = mediaSizePoints(opts.media);
  if (opts.landscape) [w, h] = [h, w];
  const PDFDocument = await loadPdfKit();
  const doc = new PDFDocument({ size: [w, h], margin: MARGIN, autoFirstPage: true, info: { Title: opts.title ?? 'document', Producer: 'AIOS Device' } });
  if (font?.family) doc.font(font.path, font.family);
  else if (font) doc.font(font.path);
  else doc.font('Helvetica');
  doc.fontSize(11);
  const done = writePdf(doc, out);
  const pages = hardWrap(text.replace(/\r\n?/g, '\n')).split('\f');
  pages.forEach((p, i) => {
    if (i > 0) doc.addPage();
    doc.text(p, { width: w - 2 * MARGIN, lineGap: 2 });
  });
  doc.end();
  await done;
}

const MAX_LINE = 300;

/**
 * Cuts lines longer than MAX_LINE characters. pdfkit's line breaking is quadratic in the length of a
 * line with few break points (40 000 characters without a newline take 25 s), and no printed line is that
 * long anyway: this bounds the conversion time by the text's size.
 */
export function hardWrap(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      if (line.length <= MAX_LINE) return line;
      const chars = Array.from(line);
      const parts: string[] = [];
      for (let i = 0; i < chars.length; i += MAX_LINE) parts.push(chars.slice(i, i + MAX_LINE).join(''));
      return parts.join('\n');
    })
    .join('\n');
}

/** A PNG or JPEG on one PDF page, scaled to fit the printable area, turned to landscape when wider than tall. */
export async function imageToPdf(image: string, out: string, opts: { media?: string; orientation?: 'portrait' | 'landscape' | 'reverse-landscape' | 'reverse-portrait'; title?: string }): Promise<void> {
  let [w, h] = mediaSizePoints(opts.media);
  const PDFDocument = await loadPdfKit();
  const doc = new PDFDocument({ size: [w, h], margin: 0, autoFirstPage: false, info: { Title: opts.title ?? 'image', Producer: 'AIOS Device' } });
  let img: PDFKit.Mixins.ImageOption & { width?: number; height?: number };
  const data = await fs.promises.readFile(image);
  try {
    img = (doc as unknown as { openImage(src: Buffer): { width: number; height: number } }).openImage(data);
  } catch {
    throw new PrinterFault('invalid_arguments', 'The image cannot be read (a damaged or unsupported PNG/JPEG).', { reason: 'bad_image' });
  }
  const wide = (img.width ?? 1) > (img.height ?? 1);
  const landscape = opts.orientation ? opts.orientation.includes('landscape') : wide;
  if (landscape) [w, h] = [h, w];
  const done = writePdf(doc, out);
  doc.addPage({ size: [w, h], margin: 0 });
  doc.image(img as unknown as Buffer, MARGIN, MARGIN, { fit: [w - 2 * MARGIN, h - 2 * MARGIN], align: 'center', valign: 'center' });
  doc.end();
  await done;
}
