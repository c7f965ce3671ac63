/**
 * The read-until logic without timers or ports: fed chunks, it says when the answer is complete
 * (a delimiter, a byte count, a regular expression on the text, or the size limit), where it ends, and
 * which bytes came after it. Time-based ends (idle gap, time limit) are the reader's.
 */
import { StringDecoder } from 'node:string_decoder';
import vm from 'node:vm';
import { SerialFault } from './faults.js';

/** How a read ended. */
export type EndReason = 'delimiter' | 'bytes' | 'regex' | 'idle' | 'time' | 'limit';

/** Text encodings for payloads and answers. */
export type TextEncoding = 'utf8' | 'latin1' | 'ascii' | 'utf16le';

/** The byte- and text-based end conditions of one read. */
export interface MatchSpec {
  delimiter?: Buffer;
  /** Keep the delimiter in the answer (default true). */
  includeDelimiter?: boolean;
  bytes?: number;
  regex?: { source: string; flags: string };
  /** Hard cap: the read ends with `limit` when this many bytes arrived. */
  maxBytes: number;
  encoding: TextEncoding;
}

/** A finished match: the answer, why it ended, and bytes that followed (to give back to the port). */
export interface MatchEnd {
  ended: EndReason;
  data: Buffer;
  rest: Buffer;
  /** The regex's matched text, for `regex` ends. */
  match?: string;
}

/** Longest time a regular expression may run on one chunk before the read is refused. */
const REGEX_BUDGET_MS = 250;

/** Flags a caller may give a regex (no g/y: the matcher keeps no position between chunks). */
export const REGEX_FLAGS = /^[imsu]*$/;

/** Throws invalid_arguments when a pattern does not compile. */
export function checkRegex(source: string, flags: string): void {
  if (!REGEX_FLAGS.test(flags)) throw new SerialFault('invalid_arguments', 'bad_settings', 'regex_flags may only hold i, m, s and u.');
  try {
    new RegExp(source, flags);
  } catch {
    throw new SerialFault('invalid_arguments', 'bad_settings', 'The regex does not compile.');
  }
}

/**
 * A caller's pattern, run in its own V8 context with a time budget: a pathological pattern on a long
 * answer ends the read with a typed error instead of freezing the agent.
 */
class BudgetedRegex {
  private readonly ctx: vm.Context;
  private static readonly exec = new vm.Script('(() => { const m = re.exec(s); return m ? [m.index, m[0]] : null; })()');
  constructor(source: string, flags: string) {
    this.ctx = vm.createContext({ s: '', re: null, source, flags });
    vm.runInContext('re = new RegExp(source, flags)', this.ctx);
  }
  exec(text: string): [number, string] | null {
    this.ctx['s'] = text;
    try {
      return BudgetedRegex.exec.runInContext(this.ctx, { timeout: REGEX_BUDGET_MS }) as [number, string] | null;
    } catch {
      throw new SerialFault('invalid_arguments', 'regex_too_slow', 'The regex took too long on the answer; use a simpler pattern.');
    }
  }
}

/** Accumulates one answer and finds its end. */
export class Matcher {
  private buf: Buffer = Buffer.alloc(0);
  private len = 0;
  private readonly decoder: StringDecoder | undefined;
  private text = '';
  private readonly regex: BudgetedRegex | undefined;

  constructor(private readonly spec: MatchSpec) {
    if (spec.regex) {
      this.regex = new BudgetedRegex(spec.regex.source, spec.regex.flags);
      this.decoder = new StringDecoder(spec.encoding);
    }
  }

  /** Bytes received so far. */
  get size(): number {
    return this.len;
  }

  /** Everything received so far (for time-based ends). */
  all(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.len));
  }

  /** Adds a chunk; returns the end when the answer is complete. */
  push(chunk: Buffer): MatchEnd | undefined {
    const start = this.len;
    this.append(chunk);
    const s = this.spec;
    let end: { at: number; ended: EndReason; cut?: number; match?: string } | undefined;
    const consider = (at: number, ended: EndReason, extra: { cut?: number; match?: string } = {}) => {
      if (!end || at < end.at) end = { at, ended, ...extra };
    };
    if (s.delimiter && s.delimiter.length) {
      const from = Math.max(0, start - s.delimiter.length + 1);
      const i = this.buf.subarray(0, this.len).indexOf(s.delimiter, from);
      if (i >= 0) consider(i + s.delimiter.length, 'delimiter', s.includeDelimiter === false ? { cut: i } : {});
    }
    if (s.bytes !== undefined && this.len >= s.bytes) consider(s.bytes, 'bytes');
    if (this.regex && this.decoder) {
      this.text += this.decoder.write(chunk);
      const m = this.regex.exec(this.text);
      if (m) consider(Buffer.byteLength(this.text.slice(0, m[0] + m[1].length), s.encoding), 'regex', { match: m[1] });
    }
    if (this.len >= s.maxBytes) consider(s.maxBytes, 'limit');
    if (!end) return undefined;
    const at = Math.min(end.at, this.len);
    return {
      ended: end.ended,
      data: Buffer.from(this.buf.subarray(0, end.cut ?? at)),
      rest: Buffer.from(this.buf.subarray(at, this.len)),
      ...(end.match !== undefined ? { match: end.match } : {}),
    };
  }

  private append(chunk: Buffer): void {
    const need = this.len + chunk.length;
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2, 256));
      this.buf.copy(grown, 0, 0, this.len);
      this.buf = grown;
    }
    chunk.copy(this.buf, this.len);
    this.len = need;
  }
}
