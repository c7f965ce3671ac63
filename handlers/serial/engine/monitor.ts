/**
 * Watches a port for a fixed time: keeps the first `maxBytes` bytes (the rest is counted, not kept),
 * splits them into lines with their arrival times, and reports the latest line and the counts.
 */
import { StringDecoder } from 'node:string_decoder';
import type { SerialLink } from './link.js';
import type { TextEncoding } from './matcher.js';

/** Options of one watch. */
export interface MonitorSpec {
  durationMs: number;
  maxBytes: number;
  encoding: TextEncoding;
  /** Lines longer than this are cut (the cut is counted in `cut_lines`). */
  maxLineChars?: number;
}

/** One received line and when it was complete (ms since the watch began). */
export interface Line {
  t_ms: number;
  text: string;
}

/** What the watch saw. */
export interface MonitorRecord {
  data: Buffer;
  lines: Line[];
  /** Bytes received in all, kept or not. */
  bytes: number;
  /** Bytes received after the record was full (not kept). */
  overflowBytes: number;
  /** Lines seen in all (kept or not). */
  lineCount: number;
  cutLines: number;
  firstByteMs: number | null;
  durationMs: number;
}

/** Counts and the newest line, as progress wants them. */
export interface MonitorProgress {
  elapsedMs: number;
  bytes: number;
  lineCount: number;
  lastLine: string | undefined;
}

/** Records until `durationMs` pass; rejects on abort (signal's reason) or a port fault. */
export function monitorLink(link: SerialLink, spec: MonitorSpec, signal: AbortSignal, onProgress: (p: MonitorProgress) => void): Promise<MonitorRecord> {
  const t0 = performance.now();
  const maxLine = spec.maxLineChars ?? 4096;
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let bytes = 0;
  let overflow = 0;
  let lineCount = 0;
  let cutLines = 0;
  let firstByteMs: number | null = null;
  const lines: Line[] = [];
  const decoder = new StringDecoder(spec.encoding);
  let partial = '';
  let lastLine: string | undefined;
  const pushLine = (raw: string, keep: boolean) => {
    let text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.length > maxLine) {
      text = text.slice(0, maxLine);
      cutLines++;
    }
    lineCount++;
    lastLine = text;
    if (keep) lines.push({ t_ms: Math.round(performance.now() - t0), text });
  };
  return new Promise<MonitorRecord>((resolve, reject) => {
    let over = false;
    let detach: () => void = () => {};
    const finish = (err?: unknown) => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      clearInterval(ticker);
      signal.removeEventListener('abort', onAbort);
      detach();
      if (err !== undefined) return reject(err);
      const tail = partial + decoder.end();
      if (tail) pushLine(tail, overflow === 0);
      resolve({ data: Buffer.concat(kept), lines, bytes, overflowBytes: overflow, lineCount, cutLines, firstByteMs, durationMs: performance.now() - t0 });
    };
    const onAbort = () => finish(signal.reason ?? new Error('aborted'));
    const timer = setTimeout(() => finish(), spec.durationMs);
    let reported = -1;
    // Progress on a clock, not per chunk: a flooding device must not flood the caller (the host caps at 10/s too).
    const ticker = setInterval(() => {
      if (bytes === reported) return;
      reported = bytes;
      onProgress({ elapsedMs: performance.now() - t0, bytes, lineCount, lastLine });
    }, 100);
    ticker.unref();
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const off = link.attach({
      data(chunk) {
        if (over) return link.unread(chunk);
        if (firstByteMs === null) firstByteMs = performance.now() - t0;
        // Lines are kept while the record has room, so the kept lines and the kept bytes agree.
        const keepLines = overflow === 0;
        bytes += chunk.length;
        const room = spec.maxBytes - keptBytes;
        const keep = room > 0 ? chunk.subarray(0, room) : Buffer.alloc(0);
        overflow += chunk.length - keep.length;
        if (keep.length) {
          kept.push(keep);
          keptBytes += keep.length;
        }
        const parts = (partial + decoder.write(chunk)).split('\n');
        partial = parts.pop() ?? '';
        for (const p of parts) pushLine(p, keepLines);
        if (partial.length > maxLine * 4) {
          pushLine(partial, keepLines);
          partial = '';
        }
      },
      fault: (f) => finish(f),
    });
    // Held bytes are delivered inside attach(); when they already ended the read, detach now.
    if (over) off();
    else detach = off;
  });
}
