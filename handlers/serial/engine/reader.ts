/**
 * Reads one answer from a port: the matcher's byte and text ends, plus an idle gap after the first byte
 * and a time limit. Cancel and timeout (the call's signal) stop it at once; the port stays open.
 */
import type { SerialFault } from './faults.js';
import type { SerialLink } from './link.js';
import { Matcher, type EndReason, type MatchSpec } from './matcher.js';

/** One read's end conditions. */
export interface ReadSpec extends MatchSpec {
  /** End after this many ms without a byte, counted from the first byte. */
  idleMs?: number;
  /** End after this many ms in any case (`time`). */
  maxMs: number;
}

/** What a read returns. */
export interface ReadResult {
  data: Buffer;
  ended: EndReason;
  match?: string;
  /** ms from the read's start to the first byte, null when none came. */
  firstByteMs: number | null;
  /** ms the read took. */
  readMs: number;
}

/** Reads until one end condition holds; rejects with the signal's reason on abort, or a fault. */
export function readUntil(link: SerialLink, spec: ReadSpec, signal: AbortSignal): Promise<ReadResult> {
  const t0 = performance.now();
  const matcher = new Matcher(spec);
  return new Promise<ReadResult>((resolve, reject) => {
    let firstByteMs: number | null = null;
    let idle: NodeJS.Timeout | undefined;
    let detach: () => void = () => {};
    let over = false;
    const finish = (err: unknown, r?: Omit<ReadResult, 'firstByteMs' | 'readMs'>) => {
      if (over) return;
      over = true;
      clearTimeout(limit);
      clearTimeout(idle);
      signal.removeEventListener('abort', onAbort);
      detach();
      if (err !== undefined) reject(err);
      else resolve({ ...r!, firstByteMs, readMs: performance.now() - t0 });
    };
    const endByTime = (ended: EndReason) => finish(undefined, { data: matcher.all(), ended });
    const onAbort = () => finish(signal.reason ?? new Error('aborted'));
    const limit = setTimeout(() => endByTime('time'), spec.maxMs);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const off = link.attach({
      data(chunk) {
        if (over) {
          link.unread(chunk);
          return;
        }
        if (firstByteMs === null && chunk.length) firstByteMs = performance.now() - t0;
        let end;
        try {
          end = matcher.push(chunk);
        } catch (e) {
          return finish(e);
        }
        if (end) {
          link.unread(end.rest);
          return finish(undefined, { data: end.data, ended: end.ended, ...(end.match !== undefined ? { match: end.match } : {}) });
        }
        if (spec.idleMs !== undefined && matcher.size > 0) {
          clearTimeout(idle);
          idle = setTimeout(() => endByTime('idle'), spec.idleMs);
        }
      },
      fault(f: SerialFault) {
        finish(f);
      },
    });
    // Held bytes are delivered inside attach(); when they already ended the read, detach now.
    if (over) off();
    else detach = off;
  });
}
