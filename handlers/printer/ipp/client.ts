/**
 * IPP over HTTP (RFC 8010 §4: one POST of `application/ipp` per operation, the document streamed after
 * the attributes). Maps transport failures to typed faults: nobody answering is `device_unavailable`
 * (`unreachable`), a connection that breaks after bytes went out is `device_unavailable`
 * (`connection_lost`, side effects possible).
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { PrinterFault } from '../model.js';
import { decodeMessage, encodeMessage, IppDecodeError, v, type IppAttribute, type IppGroup, type IppMessage } from './codec.js';
import { OP, isSuccess, statusName, type OpName } from './names.js';

const MAX_RESPONSE = 16 * 1024 * 1024;
let nextRequestId = 1;

/** A decoded IPP response with its status name. */
export interface IppResponse {
  status: number;
  statusName: string;
  statusMessage?: string;
  message: IppMessage;
}

/** Options of one operation. */
export interface IppCallOptions {
  signal: AbortSignal;
  connectTimeoutMs?: number;
  /** A document to stream after the attributes (Print-Job). */
  document?: { file: string; size: number };
  onBytes?: (sent: number) => void;
  /** IPP version to speak; 2.0 by default, 1.1 for old servers. */
  version?: { major: number; minor: number };
}

/** The HTTP URL an ipp:// or ipps:// URI is posted to (port 631 unless given). */
export function httpUrlOf(uri: string): URL {
  const u = new URL(uri);
  const scheme = u.protocol === 'ipps:' || u.protocol === 'https:' ? 'https:' : 'http:';
  const port = u.port || (u.protocol === 'ipp:' || u.protocol === 'ipps:' ? '631' : scheme === 'https:' ? '443' : '80');
  return new URL(`${scheme}//${u.hostname.includes(':') ? `[${u.hostname}]` : u.hostname}:${port}${u.pathname}${u.search}`);
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EADDRNOTAVAIL']);

/** A fault for a transport error; `sentBytes` says whether part of a document may have reached the printer. */
export function transportFault(e: NodeJS.ErrnoException, target: string, sentBytes: number): PrinterFault {
  const code = e.code ?? 'ECONNRESET';
  if (UNREACHABLE.has(code)) {
    return new PrinterFault('device_unavailable', `The printer at ${target} does not answer; check that it is on and reachable.`, { reason: 'unreachable', errno: code });
  }
  return new PrinterFault(
    'device_unavailable',
    `The connection to the printer at ${target} broke off${sentBytes > 0 ? ' while the document was being sent' : ''}.`,
    { reason: 'connection_lost', errno: code, bytes_sent: sentBytes },
    sentBytes > 0,
  );
}

/** Where a printer lives, for messages (host:port, never a path with user data). */
export function targetOf(uri: string): string {
  try {
    const u = new URL(uri);
    return u.host;
  } catch {
    return 'the configured address';
  }
}

/**
 * Sends one operation. `attrs` are the operation attributes after the charset and language, which this
 * function adds first as RFC 8011 §4.1.4 requires; `more` are further groups (e.g. job attributes).
 */
export async function ippCall(uri: string, op: OpName, attrs: IppAttribute[], more: IppGroup[], opts: IppCallOptions): Promise<IppResponse> {
  const head = encodeMessage({
    version: opts.version ?? { major: 2, minor: 0 },
    code: OP[op],
    requestId: nextRequestId++ & 0x7fffffff,
    groups: [
      {
        group: 'operation',
        attributes: [{ name: 'attributes-charset', values: [v.charset('utf-8')] }, { name: 'attributes-natural-language', values: [v.language('en')] }, ...attrs],
      },
      ...more,
    ],
  });
  const url = httpUrlOf(uri);
  const target = targetOf(uri);
  const body = await post(url, head, opts, target);
  let message: IppMessage;
  try {
    message = decodeMessage(body).message;
  } catch (e) {
    if (e instanceof IppDecodeError) throw new PrinterFault('execution_failed', `The printer at ${target} sent an IPP answer that cannot be read.`, { reason: 'bad_ipp_response' });
    throw e;
  }
  const op0 = message.groups.find((g) => g.group === 'operation');
  const sm = op0?.attributes.find((a) => a.name === 'status-message')?.values[0];
  return {
    status: message.code,
    statusName: statusName(message.code),
    ...(sm && 'value' in sm && typeof sm.value === 'string' ? { statusMessage: sm.value } : {}),
    message,
  };
}

function post(url: URL, head: Buffer, opts: IppCallOptions, target: string): Promise<Buffer> {
  const { signal } = opts;
  signal.throwIfAborted();
  const total = head.length + (opts.document?.size ?? 0);
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise<Buffer>((resolve, reject) => {
    let sent = 0;
    let settled = false;
    let connectTimer: NodeJS.Timeout | undefined;
    // Opened now, flowing only once piped below.
    const doc = opts.document ? fs.createReadStream(opts.document.file, { highWaterMark: 256 * 1024 }) : undefined;
    const finish = (err: unknown, body?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      signal.removeEventListener('abort', onAbort);
      doc?.destroy();
      // No keep-alive (agent: false): the socket goes with the request, also when the printer answered
      // before reading the whole document.
      req.destroy();
      if (err) reject(err);
      else resolve(body!);
    };
    const onAbort = () => finish(signal.reason ?? new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const req = mod.request(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/ipp', 'Content-Length': String(total) },
      agent: false,
    });
    req.on('socket', (s) => {
      connectTimer = setTimeout(() => {
        if (s.connecting) finish(transportFault(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' }), target, 0));
      }, opts.connectTimeoutMs ?? 10_000);
      s.once('connect', () => clearTimeout(connectTimer));
    });
    req.on('error', (e: NodeJS.ErrnoException) => finish(transportFault(e, target, sent)));
    req.on('response', (res) => {
      // A server may answer before reading the whole document (an error status): stop sending then.
      doc?.unpipe(req);
      if (res.statusCode === 401 || res.statusCode === 403) {
        res.resume();
        finish(new PrinterFault('permission_denied', `The printer at ${target} refused this request (HTTP ${res.statusCode}); it needs credentials this device does not have.`, { http_status: res.statusCode }));
        return;
      }
      if (res.statusCode !== 200) {
        res.resume();
        const type = res.statusCode === 404 ? 'device_unavailable' : 'execution_failed';
        finish(new PrinterFault(type, `The printer at ${target} answered HTTP ${res.statusCode}.`, { reason: res.statusCode === 404 ? 'not_found' : 'http_error', http_status: res.statusCode }, sent > head.length));
        return;
      }
      const parts: Buffer[] = [];
      let n = 0;
      res.on('data', (c: Buffer) => {
        n += c.length;
        if (n > MAX_RESPONSE) finish(new PrinterFault('execution_failed', `The printer at ${target} sent an answer that is too large.`, { reason: 'response_too_large' }));
        else parts.push(c);
      });
      res.on('end', () => finish(null, Buffer.concat(parts)));
      res.on('error', (e: NodeJS.ErrnoException) => finish(transportFault(e, target, sent)));
    });
    req.write(head);
    sent = head.length;
    if (!doc) {
      req.end();
      return;
    }
    doc.on('data', (c) => {
      sent += c.length;
      opts.onBytes?.(sent - head.length);
    });
    doc.on('error', (e) => finish(e));
    doc.pipe(req);
  });
}

/** Throws a typed fault for a non-successful status (the IPP status name always in details). */
export function ensureOk(r: IppResponse, what: string, target: string): IppResponse {
  if (isSuccess(r.status)) return r;
  throw statusFault(r, what, target);
}

/** The fault for an IPP error status, by RFC 8011 class. */
export function statusFault(r: IppResponse, what: string, target: string): PrinterFault {
  const details = { ipp_status: r.statusName, ...(r.statusMessage ? { ipp_message: r.statusMessage } : {}) };
  switch (r.statusName) {
    case 'client-error-forbidden':
    case 'client-error-not-authenticated':
    case 'client-error-not-authorized':
      return new PrinterFault('permission_denied', `The printer at ${target} refused to ${what} (${r.statusName}).`, details);
    case 'client-error-document-format-not-supported':
    case 'client-error-attributes-or-values-not-supported':
    case 'client-error-conflicting-attributes':
    case 'client-error-bad-request':
    case 'client-error-request-value-too-long':
    case 'client-error-document-format-error':
      return new PrinterFault('invalid_arguments', `The printer at ${target} did not accept the request to ${what} (${r.statusName}).`, details);
    case 'client-error-request-entity-too-large':
      return new PrinterFault('payload_too_large', `The printer at ${target} says the document is too large (${r.statusName}).`, details);
    case 'client-error-not-found':
    case 'client-error-gone':
      return new PrinterFault('invalid_arguments', `The printer at ${target} does not know that object (${r.statusName}).`, { ...details, reason: 'not_found' });
    case 'server-error-not-accepting-jobs':
      return new PrinterFault('device_unavailable', `The printer at ${target} is not accepting jobs now (${r.statusName}).`, { ...details, reason: 'not_accepting_jobs' });
    case 'server-error-busy':
    case 'server-error-service-unavailable':
    case 'server-error-temporary-error':
      return new PrinterFault('device_busy', `The printer at ${target} is busy (${r.statusName}); try again shortly.`, { ...details, reason: 'busy' });
    case 'server-error-device-error':
      return new PrinterFault('device_unavailable', `The printer at ${target} reports a device error (${r.statusName}).`, { ...details, reason: 'device_error' });
    default:
      return new PrinterFault('execution_failed', `The printer at ${target} could not ${what} (${r.statusName}).`, details);
  }
}
