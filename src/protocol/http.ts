/**
 * What the bridge's HTTP API and the agent's local endpoint share: the error body of PROTOCOL.md §10
 * and decoding a path segment.
 */
import { ERRORS } from './errors.js';

/**
 * `{ code, type, message, retryable, details? }` for an HTTP error body `{ error: … }`. Types outside the
 * catalogue (HTTP-only: not_found, method_not_allowed, …) get -32601 for "nothing there", else -32600.
 */
export function httpError(type: string, message: string, opts: { status?: number; details?: Record<string, unknown> } = {}): Record<string, unknown> {
  const spec = (ERRORS as Partial<Record<string, { code: number; retryable: boolean }>>)[type];
  const code = spec?.code ?? (type === 'not_found' || opts.status === 404 ? -32601 : -32600);
  return { code, type, message, retryable: spec?.retryable ?? false, ...(opts.details ? { details: opts.details } : {}) };
}

/** A percent-decoded path segment, or undefined when it does not decode (`%E0`): such a path names nothing. */
export function decodePathSegment(s: string): string | undefined {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}
