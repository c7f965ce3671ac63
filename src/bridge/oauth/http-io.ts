/**
 * Small request/response helpers for the login routes: bounded body reading (form or JSON) and
 * responses that are never cached, because they carry codes and tokens.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyTooLargeError, readBody, sendJson } from '../../base/http-body.js';

const MAX_BODY = 16 * 1024;

/** Reads a small request body as form fields or a JSON object; null when it is too large or malformed. */
export async function readParams(req: IncomingMessage): Promise<Record<string, unknown> | null> {
  let text: string;
  try {
    text = (await readBody(req, MAX_BODY)).toString('utf8');
  } catch (e) {
    if (e instanceof BodyTooLargeError) return null;
    throw e;
  }
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json') {
    try {
      const v: unknown = JSON.parse(text);
      return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
    } catch {
      return null;
    }
  }
  if (type === 'application/x-www-form-urlencoded' || type === '') {
    return Object.fromEntries(new URLSearchParams(text));
  }
  return null;
}

/** A string field, or undefined. */
export function str(params: Record<string, unknown>, key: string): string | undefined {
  const v = params[key];
  return typeof v === 'string' ? v : undefined;
}

/** Sends JSON with the no-store headers RFC 6749 §5.1 asks for on token responses (`Pragma` as well). */
export function sendOAuthJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJson(res, status, body, { pragma: 'no-cache', ...headers });
}

/** Sends an HTML page that cannot be framed, cached, or load anything from elsewhere. */
export function sendHtml(res: ServerResponse, status: number, html: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    ...headers,
  });
  res.end(html);
}

/** Sends a 303 redirect (after a form POST). */
export function redirect(res: ServerResponse, location: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(303, { location, 'cache-control': 'no-store', ...headers });
  res.end();
}
