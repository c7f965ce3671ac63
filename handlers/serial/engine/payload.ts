/**
 * Bytes to send, from the three ways a caller may give them (text in an encoding, hex, base64), and
 * answers in the form the caller asked for.
 */
import { SerialFault } from './faults.js';
import type { TextEncoding } from './matcher.js';

/** Hard cap on one read or one write (bytes). */
export const MAX_IO_BYTES = 1024 * 1024;

/** Bytes as a caller gives them: exactly one of text, hex or base64. */
export interface Payload {
  text?: string;
  encoding?: TextEncoding;
  hex?: string;
  base64?: string;
}

/** How answers are returned. */
export type AnswerFormat = 'text' | 'base64' | 'both';

const HEX = /^(?:[0-9a-fA-F]{2})*$/;
const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The bytes of a payload; invalid_arguments for a malformed one or one over the cap. */
export function payloadBytes(p: Payload, field = 'write'): Buffer {
  const given = [p.text !== undefined, p.hex !== undefined, p.base64 !== undefined].filter(Boolean).length;
  if (given !== 1) throw new SerialFault('invalid_arguments', 'bad_settings', `${field} needs exactly one of text, hex or base64.`);
  let b: Buffer;
  if (p.text !== undefined) b = Buffer.from(p.text, p.encoding ?? 'utf8');
  else if (p.hex !== undefined) {
    const h = p.hex.replace(/[\s:]/g, '');
    if (!HEX.test(h)) throw new SerialFault('invalid_arguments', 'bad_settings', `${field}.hex must be pairs of hexadecimal digits (spaces and colons allowed).`);
    b = Buffer.from(h, 'hex');
  } else {
    const s = p.base64!.replace(/\s/g, '');
    if (!B64.test(s) || s.length % 4 === 1) throw new SerialFault('invalid_arguments', 'bad_settings', `${field}.base64 is not valid base64.`);
    b = Buffer.from(s, 'base64');
  }
  if (b.length > MAX_IO_BYTES) throw new SerialFault('invalid_arguments', 'bad_settings', `${field} is larger than ${MAX_IO_BYTES} bytes.`);
  return b;
}

/** The answer's fields for a format. */
export function answer(data: Buffer, format: AnswerFormat, encoding: TextEncoding): { text?: string; base64?: string } {
  const out: { text?: string; base64?: string } = {};
  if (format !== 'base64') out.text = data.toString(encoding);
  if (format !== 'text') out.base64 = data.toString('base64');
  return out;
}
