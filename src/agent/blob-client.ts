/**
 * The agent's side of blobs (PROTOCOL.md §9): streams a local file up to the bridge's `PUT /v1/blobs` and a
 * blob down from `GET /v1/blobs/<id>` into a local file, hashing on the way, never holding a file in memory.
 * Downloads are checked against the reference's size and SHA-256; a mismatch removes the partial file.
 */
import fs from 'node:fs';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { WireError } from '../protocol/errors.js';
import type { BlobRef } from '../protocol/messages.js';
import type { BlobClient } from '../sdk/index.js';

/** Options of the HTTP blob client. */
export interface HttpBlobClientOptions {
  /**
   * The bridge's HTTP base, e.g. `http://127.0.0.1:8700` (a ws:// or wss:// URL is mapped to http/https),
   * or a function read at each request (the node the device session is on, `bridge.urls`).
   */
  baseUrl: string | (() => string);
  /** The device access token, read at each request (it may be refreshed). */
  token: () => string | Promise<string>;
  /** Refuse downloads larger than this before fetching (default 2 GiB). */
  maxDownloadBytes?: number;
}

const MAX_ERROR_BODY = 64 * 1024;

function hashing(hash: ReturnType<typeof createHash>, limit: number, onSize: (n: number) => void): Transform {
  let size = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      if (size > limit) return cb(new WireError('execution_failed', 'The blob is larger than its reference says.', { details: { reason: 'blob_size_mismatch' } }));
      hash.update(chunk);
      onSize(size);
      cb(null, chunk);
    },
  });
}

async function readSmall(res: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of res) {
    body += String(chunk);
    if (body.length > MAX_ERROR_BODY) break;
  }
  return body;
}

/** Turns a non-success HTTP answer into a wire error without private data. */
async function httpError(res: IncomingMessage, what: string): Promise<WireError> {
  const status = res.statusCode ?? 0;
  let parsed: { error?: { type?: unknown; message?: unknown; details?: unknown } } = {};
  try {
    parsed = JSON.parse(await readSmall(res)) as typeof parsed;
  } catch {
    /* not JSON */
  }
  if (status === 413 || parsed.error?.type === 'payload_too_large') {
    return new WireError('payload_too_large', `The bridge refused the ${what}: it is over its size limit.`, { details: { status } });
  }
  return new WireError('execution_failed', `The bridge answered the ${what} with HTTP ${status}.`, {
    details: { reason: status === 404 ? 'blob_not_found' : 'blob_http_error', status },
    retryable: status >= 500 || status === 429,
  });
}

/** The bridge's HTTP root for a ws(s) or http(s) address. */
function httpBase(address: string): URL {
  const u = new URL(address);
  if (u.protocol === 'ws:') u.protocol = 'http:';
  if (u.protocol === 'wss:') u.protocol = 'https:';
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('blob baseUrl must be http(s) or ws(s)');
  u.pathname = '/';
  u.search = '';
  return u;
}

/** Blob transfers over the bridge's HTTP API. */
export class HttpBlobClient implements BlobClient {
  private readonly base: () => URL;
  private readonly maxDownloadBytes: number;

  constructor(private readonly opts: HttpBlobClientOptions) {
    const { baseUrl } = opts;
    if (typeof baseUrl === 'string') {
      const fixed = httpBase(baseUrl);
      this.base = () => fixed;
    } else this.base = () => httpBase(baseUrl());
    this.maxDownloadBytes = opts.maxDownloadBytes ?? 2 * 1024 ** 3;
  }

  private async request(method: string, pathname: string, headers: Record<string, string>, signal?: AbortSignal): Promise<http.ClientRequest> {
    const url = new URL(pathname, this.base());
    const lib = url.protocol === 'https:' ? https : http;
    const token = await this.opts.token();
    const opts: http.RequestOptions = { method, headers: { ...headers, authorization: `Bearer ${token}` } };
    if (signal) opts.signal = signal;
    return lib.request(url, opts);
  }

  async uploadFile(file: string, mediaType: string, signal?: AbortSignal): Promise<BlobRef> {
    signal?.throwIfAborted();
    const fh = await fs.promises.open(file, 'r');
    let size: number;
    let req: http.ClientRequest;
    try {
      size = (await fh.stat()).size;
      req = await this.request('PUT', '/v1/blobs', { 'content-type': mediaType, 'content-length': String(size) }, signal);
    } catch (e) {
      // No read stream owns the handle yet (it closes it once the body is sent).
      await fh.close();
      throw e;
    }
    const hash = createHash('sha256');
    const response = new Promise<IncomingMessage>((resolve, reject) => {
      req.once('response', resolve);
      req.once('error', reject);
    });
    // The bridge may answer (413) before the body is sent; then the send error does not matter.
    const sent = pipeline(fh.createReadStream(), hashing(hash, size, () => {}), req).then(
      () => null,
      (e: unknown) => e,
    );
    let res: IncomingMessage;
    try {
      res = await response;
    } catch (e) {
      await sent;
      if (signal?.aborted) throw signal.reason;
      throw new WireError('execution_failed', 'The blob upload could not reach the bridge.', { details: { reason: 'blob_network', code: (e as NodeJS.ErrnoException).code }, retryable: true });
    }
    if (res.statusCode !== 201 && res.statusCode !== 200) {
      const err = await httpError(res, 'upload');
      await sent;
      throw err;
    }
    const sendError = await sent;
    if (sendError) {
      if (signal?.aborted) throw signal.reason;
      throw new WireError('execution_failed', 'The blob upload was interrupted.', { details: { reason: 'blob_network' }, retryable: true });
    }
    const ref = JSON.parse(await readSmall(res)) as BlobRef;
    const digest = hash.digest('hex');
    if (ref.size !== size || ref.sha256 !== digest) {
      throw new WireError('execution_failed', 'The bridge stored different bytes than were sent.', { details: { reason: 'blob_hash_mismatch' }, retryable: true });
    }
    return ref;
  }

  async downloadToFile(ref: BlobRef, file: string, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (ref.size > this.maxDownloadBytes) {
      throw new WireError('payload_too_large', 'The blob is larger than this device accepts.', { details: { size: ref.size, limit: this.maxDownloadBytes } });
    }
    const req = await this.request('GET', `/v1/blobs/${encodeURIComponent(ref.blob_id)}`, {}, signal);
    const hash = createHash('sha256');
    let got = 0;
    try {
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        req.once('response', resolve);
        req.once('error', reject);
        req.end();
      });
      if (res.statusCode !== 200) throw await httpError(res, 'download');
      const declared = res.headers['content-length'];
      if (declared !== undefined && Number(declared) !== ref.size) {
        res.destroy();
        throw new WireError('execution_failed', 'The blob on the bridge does not match its reference.', { details: { reason: 'blob_size_mismatch' } });
      }
      await pipeline(res, hashing(hash, ref.size, (n) => (got = n)), fs.createWriteStream(file, { flags: 'w', mode: 0o600 }), signal ? { signal } : {});
      if (got !== ref.size || hash.digest('hex') !== ref.sha256) {
        throw new WireError('execution_failed', 'The downloaded blob does not match its size or SHA-256.', { details: { reason: got !== ref.size ? 'blob_size_mismatch' : 'blob_hash_mismatch' } });
      }
    } catch (e) {
      await fs.promises.rm(file, { force: true }).catch(() => {});
      if (signal?.aborted) throw signal.reason;
      if (e instanceof WireError) throw e;
      throw new WireError('execution_failed', 'The blob download was interrupted.', { details: { reason: 'blob_network', code: (e as NodeJS.ErrnoException).code }, retryable: true });
    }
  }
}
