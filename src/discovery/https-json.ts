/**
 * Minimal JSON over HTTPS for remote adapters: no redirects (a redirect would move trust to another origin),
 * bounded bodies and time, and an optional extra CA (for private deployments and tests).
 */
import { Agent, request } from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';

/** Transport options. */
export interface HttpsJsonOptions {
  /** Extra CA certificate(s) in PEM to trust in addition to the system store. */
  ca?: string | Buffer | undefined;
  /** Default 10 s. */
  timeoutMs?: number;
  /** Largest accepted response body (default 1 MiB). */
  maxBytes?: number;
  signal?: AbortSignal | undefined;
}

/** A transport failure; `sent` tells whether the request may have reached the server. */
export class HttpsJsonError extends Error {
  constructor(message: string, readonly sent: boolean, readonly status?: number) {
    super(message);
    this.name = 'HttpsJsonError';
  }
}

const agents = new Map<string, Agent>();

/**
 * An agent whose connections trust Node's bundled roots plus `ca` (a `ca` option alone would replace
 * the roots). Made once per CA: its TLS context parses every root certificate, tens of milliseconds.
 * Its own agent, not the global one: pooled connections and TLS sessions are never shared with
 * requests that do not trust this CA.
 */
function agentWithCa(ca: string): Agent {
  let a = agents.get(ca);
  if (!a) {
    a = new Agent({ secureContext: createSecureContext({ ca: [...rootCertificates, ca] }) });
    agents.set(ca, a);
  }
  return a;
}

/** Sends one request and parses the JSON answer. Only `https:` URLs are accepted. */
export function httpsJson(method: 'GET' | 'POST', url: URL, body: unknown, opts: HttpsJsonOptions = {}): Promise<unknown> {
  if (url.protocol !== 'https:') return Promise.reject(new HttpsJsonError('only https URLs are accepted', false));
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const maxBytes = opts.maxBytes ?? 1024 * 1024;
  return new Promise((resolve, reject) => {
    let sent = false;
    const req = request(
      url,
      {
        method,
        ...(opts.ca !== undefined ? { agent: agentWithCa(opts.ca.toString()) } : {}),
        timeout: opts.timeoutMs ?? 10_000,
        signal: opts.signal,
        headers: { Accept: 'application/json', ...(payload && { 'Content-Type': 'application/json', 'Content-Length': payload.length }) },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) {
            req.destroy();
            reject(new HttpsJsonError('the response is too large', true, status));
          } else chunks.push(c);
        });
        res.on('end', () => {
          if (status < 200 || status >= 300) return reject(new HttpsJsonError(`the server answered HTTP ${status}`, true, status));
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch {
            reject(new HttpsJsonError('the response is not valid JSON', true, status));
          }
        });
        res.on('error', (e) => reject(new HttpsJsonError(e.message, true, status)));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (e: NodeJS.ErrnoException) => reject(new HttpsJsonError(e.message, sent && e.code !== 'ECONNREFUSED')));
    req.on('finish', () => {
      sent = true;
    });
    req.end(payload);
  });
}
