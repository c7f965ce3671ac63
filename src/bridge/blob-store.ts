/**
 * The reference bridge's blob store (PROTOCOL.md §9): large inputs and outputs as files in the bridge's
 * data directory, each with its SHA-256, size, media type and an expiry. Uploads stream to a temp file
 * while hashing and become visible by one rename; nothing is held whole in memory.
 * `handleHttp` serves `PUT /v1/blobs` and `GET /v1/blobs/<id>` for a caller that has already authenticated
 * the request.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { WireError } from '../protocol/errors.js';
import { sendError, sendJson } from './http-util.js';
import { decodePathSegment } from '../protocol/http.js';
import type { BlobRef } from '../protocol/messages.js';

/** Options of a blob store. */
export interface BlobStoreOptions {
  /** Folder for blobs (created 0700). */
  dir: string;
  /** Largest blob accepted (default 2 GiB). */
  maxBytes?: number;
  /** Lifetime of a blob after upload (default 24 h); expired blobs are removed by `sweep`. */
  ttlMs?: number;
  /** Bytes one scope (a workspace) may hold in live blobs and uploads under way (default 2 GiB). */
  quotaBytes?: number;
  /** Clock, for tests. */
  now?: () => number;
}

interface Meta {
  ref: BlobRef;
  created_ms: number;
  expires_ms: number;
  /** Who may read it (e.g. the workspace id); undefined = any authenticated caller. */
  scope?: string;
}

const ID_RE = /^[A-Za-z0-9_-]{1,128}$/;
const MEDIA_RE = /^[\w.+-]+\/[\w.+-]+$/;

function mediaTypeOf(header: string | undefined): string {
  const t = (header ?? '').split(';')[0]!.trim().toLowerCase();
  return MEDIA_RE.test(t) ? t : 'application/octet-stream';
}

/** Stores blobs on disk with size limits and expiry. */
export class BlobStore {
  readonly dir: string;
  readonly maxBytes: number;
  readonly ttlMs: number;
  readonly quotaBytes: number;
  private readonly now: () => number;
  private ready: Promise<void> | undefined;
  /** Bytes held per scope ('' = unscoped): live blobs plus uploads under way. */
  private readonly used = new Map<string, number>();

  constructor(opts: BlobStoreOptions) {
    this.dir = opts.dir;
    this.maxBytes = opts.maxBytes ?? 2 * 1024 ** 3;
    this.ttlMs = opts.ttlMs ?? 24 * 3600 * 1000;
    this.quotaBytes = opts.quotaBytes ?? 2 * 1024 ** 3;
    this.now = opts.now ?? Date.now;
  }

  private init(): Promise<void> {
    this.ready ??= (async () => {
      await fs.promises.mkdir(path.join(this.dir, 'tmp'), { recursive: true, mode: 0o700 });
      // What each scope holds already (a restart must not reset the quota).
      for (const name of await fs.promises.readdir(this.dir)) {
        const m = /^(.+)\.json$/.exec(name);
        const meta = m ? await this.readMeta(m[1]!) : null;
        if (meta) this.charge(meta.scope, meta.ref.size);
      }
    })();
    return this.ready;
  }

  private charge(scope: string | undefined, bytes: number): void {
    const k = scope ?? '';
    const n = (this.used.get(k) ?? 0) + bytes;
    if (n > 0) this.used.set(k, n);
    else this.used.delete(k);
  }

  /** Bytes `scope` holds now (live blobs not yet swept, and uploads under way). */
  async usedBytes(scope?: string): Promise<number> {
    await this.init();
    return this.used.get(scope ?? '') ?? 0;
  }

  private overQuota(scope: string | undefined): WireError {
    return new WireError(
      'payload_too_large',
      `The workspace's blob storage is full (quota ${this.quotaBytes} bytes); blobs are removed ${Math.round(this.ttlMs / 3_600_000)} h after upload, or upload less.`,
      { details: { quota_bytes: this.quotaBytes, used_bytes: this.used.get(scope ?? '') ?? 0 } },
    );
  }

  private dataPath(id: string): string {
    return path.join(this.dir, `${id}.bin`);
  }

  private metaPath(id: string): string {
    return path.join(this.dir, `${id}.json`);
  }

  /**
   * Streams `stream` into a new blob. Throws `payload_too_large` past `maxBytes` (or when `declaredSize`
   * already is), or past the scope's quota (expired blobs are swept first), leaving nothing behind.
   */
  async put(stream: Readable, mediaType: string, opts: { declaredSize?: number; scope?: string; signal?: AbortSignal } = {}): Promise<BlobRef> {
    await this.init();
    if (opts.declaredSize !== undefined && opts.declaredSize > this.maxBytes) {
      stream.resume();
      throw this.tooLarge();
    }
    const scope = opts.scope;
    const room = async (bytes: number) => (this.used.get(scope ?? '') ?? 0) + bytes <= this.quotaBytes || ((await this.sweep()) > 0 && (this.used.get(scope ?? '') ?? 0) + bytes <= this.quotaBytes);
    if (opts.declaredSize !== undefined && !(await room(opts.declaredSize))) {
      stream.resume();
      throw this.overQuota(scope);
    }
    const id = `b_${randomBytes(16).toString('base64url')}`;
    const tmp = path.join(this.dir, 'tmp', `${id}.part`);
    const hash = createHash('sha256');
    let size = 0;
    let charged = 0;
    const max = this.maxBytes;
    // Bytes under way count against the quota as they arrive, so parallel uploads cannot overrun it together.
    const counter = new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        size += chunk.length;
        if (size > max) return cb(this.tooLarge());
        if ((this.used.get(scope ?? '') ?? 0) + chunk.length > this.quotaBytes) return cb(this.overQuota(scope));
        this.charge(scope, chunk.length);
        charged += chunk.length;
        hash.update(chunk);
        cb(null, chunk);
      },
    });
    try {
      await pipeline(stream, counter, fs.createWriteStream(tmp, { flags: 'wx', mode: 0o600 }), opts.signal ? { signal: opts.signal } : {});
    } catch (e) {
      this.charge(scope, -charged);
      await fs.promises.rm(tmp, { force: true });
      throw e;
    }
    const ref: BlobRef = { blob_id: id, sha256: hash.digest('hex'), size, media_type: mediaType };
    const created = this.now();
    const meta: Meta = { ref, created_ms: created, expires_ms: created + this.ttlMs };
    if (opts.scope !== undefined) meta.scope = opts.scope;
    const metaTmp = path.join(this.dir, 'tmp', `${id}.json`);
    try {
      await fs.promises.writeFile(metaTmp, JSON.stringify(meta), { mode: 0o600 });
      // Data first, then metadata: a blob is visible only once both are in place.
      await fs.promises.rename(tmp, this.dataPath(id));
      await fs.promises.rename(metaTmp, this.metaPath(id));
    } catch (e) {
      this.charge(scope, -charged);
      await Promise.all([tmp, metaTmp, this.dataPath(id)].map((f) => fs.promises.rm(f, { force: true })));
      throw e;
    }
    return ref;
  }

  private tooLarge(): WireError {
    return new WireError('payload_too_large', 'The blob is larger than the bridge accepts.', { details: { limit: this.maxBytes } });
  }

  private async readMeta(id: string): Promise<Meta | null> {
    if (!ID_RE.test(id)) return null;
    try {
      return JSON.parse(await fs.promises.readFile(this.metaPath(id), 'utf8')) as Meta;
    } catch {
      return null;
    }
  }

  /** The reference of a live blob, or null (unknown, expired, or out of `scope`). */
  async stat(id: string, scope?: string): Promise<BlobRef | null> {
    const meta = await this.readMeta(id);
    if (!meta) return null;
    if (meta.expires_ms <= this.now()) {
      await this.delete(id);
      return null;
    }
    if (meta.scope !== undefined && scope !== undefined && meta.scope !== scope) return null;
    return meta.ref;
  }

  /** Opens a live blob for reading, or null. */
  async open(id: string, scope?: string): Promise<{ ref: BlobRef; stream: Readable } | null> {
    const ref = await this.stat(id, scope);
    if (!ref) return null;
    try {
      const fh = await fs.promises.open(this.dataPath(id), 'r');
      return { ref, stream: fh.createReadStream() };
    } catch {
      return null;
    }
  }

  /** Removes a blob (no error when it is gone); its bytes no longer count against its scope. */
  async delete(id: string): Promise<void> {
    if (!ID_RE.test(id)) return;
    await this.init();
    const meta = await this.readMeta(id);
    // Only the call that removes the metadata gives the bytes back, so two racing deletes count once.
    const removed = await fs.promises.unlink(this.metaPath(id)).then(() => true, () => false);
    if (removed && meta) this.charge(meta.scope, -meta.ref.size);
    await fs.promises.rm(this.dataPath(id), { force: true });
  }

  /** Removes expired blobs and stale partial uploads; returns how many blobs went. */
  async sweep(): Promise<number> {
    await this.init();
    let n = 0;
    const now = this.now();
    for (const name of await fs.promises.readdir(this.dir)) {
      const m = /^(.+)\.(json|bin)$/.exec(name);
      if (!m) continue;
      const id = m[1]!;
      const meta = await this.readMeta(id);
      if (m[2] === 'json' && meta && meta.expires_ms <= now) {
        await this.delete(id);
        n++;
      } else if (m[2] === 'bin' && !meta) {
        // Data without metadata: a put that died between the two renames, or a half-deleted blob.
        const st = await fs.promises.stat(path.join(this.dir, name)).catch(() => null);
        if (st && now - st.mtimeMs > this.ttlMs) await fs.promises.rm(path.join(this.dir, name), { force: true });
      }
    }
    const tmpDir = path.join(this.dir, 'tmp');
    for (const name of await fs.promises.readdir(tmpDir)) {
      const st = await fs.promises.stat(path.join(tmpDir, name)).catch(() => null);
      if (st && now - st.mtimeMs > this.ttlMs) await fs.promises.rm(path.join(tmpDir, name), { force: true });
    }
    return n;
  }

  /** Runs `sweep` every `intervalMs` (timer unref'd); returns a stop function. */
  startSweeping(intervalMs = 10 * 60 * 1000): () => void {
    const t = setInterval(() => void this.sweep().catch(() => {}), intervalMs);
    t.unref();
    return () => clearInterval(t);
  }

  /**
   * Serves `PUT /v1/blobs` and `GET|HEAD /v1/blobs/<id>` for an already authenticated caller. Returns false
   * when `pathname` is not a blob route. `scope` (e.g. the caller's workspace) binds uploads and limits reads.
   */
  async handleHttp(req: IncomingMessage, res: ServerResponse, pathname: string, scope?: string): Promise<boolean> {
    if (pathname !== '/v1/blobs' && !pathname.startsWith('/v1/blobs/')) return false;
    try {
      if (pathname === '/v1/blobs') {
        if (req.method !== 'PUT' && req.method !== 'POST') return fail(res, 405, new WireError('invalid_arguments', 'Use PUT to upload a blob.')), true;
        const len = req.headers['content-length'];
        const declared = len !== undefined ? Number(len) : undefined;
        const opts: { declaredSize?: number; scope?: string } = {};
        if (declared !== undefined && Number.isFinite(declared)) opts.declaredSize = declared;
        if (scope !== undefined) opts.scope = scope;
        // A pass-through, so that a refused upload destroys only it and the socket can still carry the 413.
        const body = new PassThrough();
        req.pipe(body);
        let ref: BlobRef;
        try {
          ref = await this.put(body, mediaTypeOf(req.headers['content-type']), opts);
        } catch (e) {
          req.unpipe(body);
          drainRequest(req);
          throw e;
        }
        sendJson(res, 201, ref);
        return true;
      }
      // Blob ids are plain ASCII; an undecodable one (`%E0`) names no blob.
      const id = decodePathSegment(pathname.slice('/v1/blobs/'.length));
      if (req.method !== 'GET' && req.method !== 'HEAD') return fail(res, 405, new WireError('invalid_arguments', 'Use GET to download a blob.')), true;
      const opened = id !== undefined && ID_RE.test(id) ? await this.open(id, scope) : null;
      if (!opened) {
        fail(res, 404, new WireError('invalid_arguments', 'No such blob; it may have expired.'));
        return true;
      }
      res.writeHead(200, {
        'content-type': opened.ref.media_type,
        'content-length': String(opened.ref.size),
        'x-blob-sha256': opened.ref.sha256,
        'cache-control': 'no-store',
      });
      if (req.method === 'HEAD') {
        opened.stream.destroy();
        res.end();
        return true;
      }
      await pipeline(opened.stream, res).catch(() => {});
      return true;
    } catch (e) {
      const err = e instanceof WireError ? e : new WireError('execution_failed', 'The blob could not be stored.');
      fail(res, err.type === 'payload_too_large' ? 413 : 500, err);
      return true;
    }
  }
}

/** Bytes of a refused upload read and thrown away so the client can read the 413 instead of a reset. */
const DRAIN_LIMIT = 64 * 1024 * 1024;

/**
 * Keeps reading a refused upload's body (up to a cap), so the server does not close the socket under a
 * client that is still sending: that would reset the connection before the client reads the error.
 */
function drainRequest(req: IncomingMessage): void {
  let seen = 0;
  req.on('data', (c: Buffer) => {
    seen += c.length;
    if (seen > DRAIN_LIMIT) req.destroy();
  });
  req.resume();
}

/** Answers with a typed error and closes the connection (an upload body may still be arriving). */
function fail(res: ServerResponse, status: number, e: WireError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendError(res, status, e.type, e.message, e.details, { Connection: 'close' });
}
