/**
 * I-JSON (RFC 7493) and a nesting bound for what runtimes send: arguments must be canonicalisable
 * (RFC 8785) for dedup digests, so strings and member names hold no lone surrogate, numbers are finite,
 * and nesting stays below a depth that recursive code (canonicalisation, schema validation, logging)
 * handles without exhausting the stack. Checked where requests enter (the bridge API, the agent).
 */
import type { Violation } from './schema-validator.js';

/** Deepest nesting of objects and arrays accepted in a request (the request body counts as depth 1). */
export const MAX_JSON_DEPTH = 64;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The first place where `value` is not I-JSON or nests deeper than `maxDepth`, as a violation with its JSON Pointer; null when it is fine. */
export function ijsonViolation(value: unknown, pointer = '', maxDepth = MAX_JSON_DEPTH): Violation | null {
  // Iterative, so a hostile depth cannot overflow this check itself.
  const stack: { v: unknown; at: string; depth: number }[] = [{ v: value, at: pointer, depth: 0 }];
  while (stack.length) {
    const { v, at, depth } = stack.pop()!;
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) return { pointer: at, message: 'The string holds a lone surrogate (not I-JSON, RFC 7493); send well-formed Unicode.' };
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return { pointer: at, message: 'The number is out of range (not I-JSON, RFC 7493).' };
    } else if (v !== null && typeof v === 'object') {
      if (depth + 1 > maxDepth) return { pointer: at, message: `Nested deeper than ${maxDepth} levels.` };
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], at: `${at}/${i}`, depth: depth + 1 });
      } else {
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
          if (LONE_SURROGATE.test(k)) return { pointer: at, message: 'A member name holds a lone surrogate (not I-JSON, RFC 7493).' };
          stack.push({ v: x, at: `${at}/${escapePointer(k)}`, depth: depth + 1 });
        }
      }
    }
  }
  return null;
}
