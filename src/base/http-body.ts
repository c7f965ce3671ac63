/**
 * Request bodies with a size cap and responses that are never cached: the one implementation the bridge's
 * runtime API, its login routes and the agent's local endpoint share. No product knowledge here: callers
 * turn `BodyTooLargeError` into their own error body.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A request body over its limit (raised before reading when Content-Length already says so). */
export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The request body is larger than ${limit} bytes.`);
    this.name = 'BodyTooLargeError';
  }
}

/** Reads a request body of at most `limit` bytes; throws BodyTooLargeError past it (the rest stays unread). */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? '0') > limit) throw new BodyTooLargeError(limit);
  // A body read once cannot be read again: say so now instead of waiting for an 'end' that came before.
  if (req.readableEnded) throw new Error('the request body was already read');
  // Events, not `for await`: an async iterator per request costs more than the parse (bench:bridge).
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume(); // drain the rest so the connection stays usable for the error answer
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    let ended = false;
    req.once('end', () => {
      ended = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.once('error', reject);
    // A client that goes away mid-body: 'close' without 'end' (settling twice is a no-op).
    req.once('close', () => {
      if (!ended) reject(new Error('the request was closed before its body ended'));
    });
  });
}

/**
 * Sends a ready body with `no-store` and `nosniff`. Header names are merged case-insensitively, so a
 * caller's `Cache-Control` replaces the default instead of being sent beside it.
 */
export function sendText(res: ServerResponse, status: number, contentType: string, text: string, headers: Record<string, string> = {}): void {
  const all: Record<string, string | number> = {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  };
  for (const [k, v] of Object.entries(headers)) all[k.toLowerCase()] = v;
  res.writeHead(status, all);
  res.end(text);
}

/** Sends a value as `application/json; charset=utf-8` (see sendText for the headers). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendText(res, status, 'application/json; charset=utf-8', JSON.stringify(body), headers);
}
