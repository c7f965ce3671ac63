/**
 * Small HTTP helpers for the bridge: JSON bodies with a size cap (read by src/base/http-body.ts), typed
 * error bodies (§10).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { WireError, type ErrorType } from '../protocol/errors.js';
import { httpError } from '../protocol/http.js';
import { BodyTooLargeError, readBody, sendJson } from '../base/http-body.js';
import { TokenBucket } from './token-bucket.js';

/** An HTTP-level failure with its status and §2 error body. */
export class HttpError extends Error {
  constructor(readonly status: number, readonly type: ErrorType | 'not_found' | 'bad_request' | 'method_not_allowed', message: string, readonly details?: Record<string, unknown>) {
    super(message);
  }
}

/** Sends `{ error: { code, type, message, retryable, details? } }`. */
export function sendError(res: ServerResponse, status: number, type: string, message: string, details?: Record<string, unknown>, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error: httpError(type, message, { status, ...(details ? { details } : {}) }) }, headers);
}

/**
 * Seconds a client is told to wait (`Retry-After`) before trying again while a clustered bridge cannot reach
 * its database (`store_unavailable`): about how long a PostgreSQL restart or failover takes.
 */
export const STORE_RETRY_AFTER_S = 5;

/** HTTP status for a wire error type raised while serving a request. */
export function statusForWireError(e: WireError): number {
  switch (e.type) {
    case 'unauthorized':
      return 401;
    case 'identity_mismatch':
      return 403;
    case 'device_offline':
    case 'idempotency_conflict':
    case 'not_cancellable':
      return 409;
    case 'payload_too_large':
      return 413;
    case 'rate_limited':
      return 429;
    case 'store_unavailable':
      return 503;
    case 'invalid_arguments':
      return 400;
    default:
      return 502;
  }
}

/** Reads a JSON body up to `limit` bytes; throws HttpError 413 / 400. (Events, not `for await`: an async iterator per request costs more than the parse.) */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  let text: string;
  try {
    text = (await readBody(req, limit)).toString('utf8');
  } catch (e) {
    if (e instanceof BodyTooLargeError) throw new HttpError(413, 'payload_too_large', e.message, { limit });
    throw e;
  }
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'bad_request', 'The request body is not valid JSON.');
  }
}

/**
 * What the runtime API takes a token from for each request: one process's {@link RateLimiter}, or the cluster's
 * buckets in PostgreSQL (`store/pg-rate-limits.ts`), which every node shares.
 */
export interface RateLimit {
  /** Takes one token from `key`'s bucket; 0 when allowed, else the milliseconds until one is available. */
  take(key: string): number | Promise<number>;
}

/** A token bucket per key in this process's memory, for `rate_limited`. */
export class RateLimiter implements RateLimit {
  private readonly buckets = new Map<string, TokenBucket>();
  constructor(private readonly perSecond: number, private readonly burst: number) {}

  /** Takes one token from `key`'s bucket; returns 0 when allowed, else the milliseconds until one is available. */
  take(key: string, now = Date.now()): number {
    let b = this.buckets.get(key);
    if (!b) this.buckets.set(key, (b = new TokenBucket(this.perSecond, this.burst, now)));
    return b.take(now);
  }
}

/**
 * A cap on what one key (a runtime token) holds open at once: SSE `events` streams, `wait: true` requests
 * and MCP sessions share it (config `runtime_stream_limit`). `tryAcquire` returns the release function,
 * or null when the key already holds `limit`; releasing twice is harmless.
 */
export class StreamLimiter {
  private readonly open = new Map<string, number>();
  constructor(readonly limit: number) {}

  tryAcquire(key: string): (() => void) | null {
    const n = this.open.get(key) ?? 0;
    if (n >= this.limit) return null;
    this.open.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    };
  }

  /** How many the key holds open now. */
  held(key: string): number {
    return this.open.get(key) ?? 0;
  }
}
