/**
 * Small HTTP helpers for the bridge: JSON bodies with a size cap, typed error bodies (§10).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { WireError, type ErrorType } from '../protocol/errors.js';
import { httpError } from '../protocol/http.js';

/** An HTTP-level failure with its status and §2 error body. */
export class HttpError extends Error {
  constructor(readonly status: number, readonly type: ErrorType | 'not_found' | 'bad_request' | 'method_not_allowed', message: string, readonly details?: Record<string, unknown>) {
    super(message);
  }
}

/** Sends a JSON body. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store', ...headers });
  res.end(text);
}

/** Sends `{ error: { code, type, message, retryable, details? } }`. */
export function sendError(res: ServerResponse, status: number, type: string, message: string, details?: Record<string, unknown>, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error: httpError(type, message, { status, ...(details ? { details } : {}) }) }, headers);
}

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
    case 'invalid_arguments':
      return 400;
    default:
      return 502;
  }
}

/** Reads a JSON body up to `limit` bytes; throws HttpError 413 / 400. (Events, not `for await`: an async iterator per request costs more than the parse.) */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > limit) throw new HttpError(413, 'payload_too_large', `The request body is larger than ${limit} bytes.`, { limit });
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume(); // drain the rest so the connection stays usable for the error answer
        reject(new HttpError(413, 'payload_too_large', `The request body is larger than ${limit} bytes.`, { limit }));
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'bad_request', 'The request body is not valid JSON.');
  }
}

/** A token bucket per key, for `rate_limited`. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private readonly perSecond: number, private readonly burst: number) {}

  /** Takes one token; returns 0 when allowed, else the milliseconds until one is available. */
  take(key: string, now = Date.now()): number {
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) / this.perSecond) * 1000);
  }
}
