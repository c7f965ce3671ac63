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
import { sendError, STORE_RETRY_AFTER_S, type RateLimit } from './http-util.js';
import { bearer } from './auth.js';
import { sendJson } from '../base/http-body.js';
import { decodePathSegment } from '../protocol/http.js';
import type { BlobRef } from '../protocol/messages.js';

/** Options of a blob store. */
export interface BlobStoreOptions {
  /** Folder for blobs (created 0700). On a cluster, a folder every node mounts (`blobs.dir`). */
  dir: string;
  /** Largest blob accepted (default 2 GiB). */
  maxBytes?: number;
  /** Lifetime of a blob after upload (default 24 h); expired blobs are removed by `sweep`. */
  ttlMs?: number;
  /** Bytes one scope (a workspace) may hold in live blobs and uploads under way (default 2 GiB). */
  quotaBytes?: number;
  /**
   * Where the blobs' metadata and each scope's bytes are kept (default: JSON files beside the blobs and a count
   * in this process, {@link FileBlobLedger}; a cluster node gives PostgreSQL's).
   */
  ledger?: BlobLedger;
  /** Clock, for tests. */
  now?: () => number;
}

/** What a blob's record says. */
export interface BlobMeta {
  ref: BlobRef;
  created_ms: number;
  expires_ms: number;
  /** Who may read it (e.g. the workspace id); undefined = any authenticated caller. */
  scope?: string;
}

/**
 * Where a blob store keeps its blobs' records and counts each scope's bytes against its quota: live blobs plus
 * uploads under way, so parallel uploads cannot overrun the quota together. The bytes themselves are files in
 * the store's folder either way.
 */
export interface BlobLedger {
  /**
   * Bytes an upload may pass on before they are reserved together (0: each chunk is reserved before it is
   * written). A remote ledger reserves in steps, one round trip per step instead of per chunk; the quota still
   * holds exactly, since every byte is reserved before the blob can be committed.
   */
  readonly reserveEvery: number;
  /** Prepares the ledger (once; the store calls it before anything else). */
  init(): Promise<void>;
  /** Bytes `scope` holds now (live blobs and uploads under way). */
  used(scope: string | undefined): Promise<number>;
  /**
   * Adds `bytes` to upload `id`'s reservation in `scope` when the scope's bytes stay within `quota`; false, and
   * nothing reserved, otherwise.
   */
  reserve(id: string, scope: string | undefined, bytes: number, quota: number): Promise<boolean>;
  /** The upload failed: its reservation is given back. */
  release(id: string, scope: string | undefined): Promise<void>;
  /** The upload's data is in place: the blob's record, live from now for `ttlMs`; its reservation becomes its size. */
  commit(id: string, scope: string | undefined, ref: BlobRef, now: number, ttlMs: number): Promise<void>;
  /** A blob's record with whether it has expired at `now`, or null. */
  get(id: string, now: number): Promise<(BlobMeta & { expired: boolean }) | null>;
  /** Removes a blob's record; the record, or null when there was none (a racing delete took it: its bytes count once). */
  remove(id: string): Promise<BlobMeta | null>;
  /** Removes the records of blobs expired at `now` (and of abandoned uploads); their ids. */
  expire(now: number): Promise<string[]>;
  /** Which of `ids` have a record. */
  known(ids: string[]): Promise<Set<string>>;
  /** Stops what the ledger runs (timers); the store stays usable by others. */
  close?(): void;
}

const ID_RE = /^[A-Za-z0-9_-]{1,128}$/;
const MEDIA_RE = /^[\w.+-]+\/[\w.+-]+$/;

function mediaTypeOf(header: string | undefined): string {
  const t = (header ?? '').split(';')[0]!.trim().toLowerCase();
  return MEDIA_RE.test(t) ? t : 'application/octet-stream';
}

/**
 * The single process's ledger: a JSON file per blob beside its data (`<id>.json`, written after the data, so a
 * blob is visible only once both are in place) and each scope's bytes counted in this process (recounted from
 * the files at start, so a restart does not reset the quota).
 */
export class FileBlobLedger implements BlobLedger {
  readonly reserveEvery = 0;
  /** Bytes held per scope ('' = unscoped): live blobs plus uploads under way. */
  private readonly usedBy = new Map<string, number>();
  /** Bytes reserved per upload under way. */
  private readonly reserved = new Map<string, number>();

  constructor(private readonly dir: string) {}

  async init(): Promise<void> {
    await fs.promises.mkdir(path.join(this.dir, 'tmp'), { recursive: true, mode: 0o700 });
    for (const name of await fs.promises.readdir(this.dir)) {
      const m = /^(.+)\.json$/.exec(name);
      const meta = m ? await this.read(m[1]!) : null;
      if (meta) this.charge(meta.scope, meta.ref.size);
    }
  }

  private charge(scope: string | undefined, bytes: number): void {
    const k = scope ?? '';
    const n = (this.usedBy.get(k) ?? 0) + bytes;
    if (n > 0) this.usedBy.set(k, n);
    else this.usedBy.delete(k);
  }

  private metaPath(id: string): string {
    return path.join(this.dir, `${id}.json`);
  }

  private async read(id: string): Promise<BlobMeta | null> {
    if (!ID_RE.test(id)) return null;
    try {
      return JSON.parse(await fs.promises.readFile(this.metaPath(id), 'utf8')) as BlobMeta;
    } catch {
      return null;
    }
  }

  async used(scope: string | undefined): Promise<number> {
    return this.usedBy.get(scope ?? '') ?? 0;
  }

  async reserve(id: string, scope: string | undefined, bytes: number, quota: number): Promise<boolean> {
    if ((this.usedBy.get(scope ?? '') ?? 0) + bytes > quota) return false;
    this.charge(scope, bytes);
    this.reserved.set(id, (this.reserved.get(id) ?? 0) + bytes);
    return true;
  }

  async release(id: string, scope: string | undefined): Promise<void> {
    this.charge(scope, -(this.reserved.get(id) ?? 0));
    this.reserved.delete(id);
  }

  async commit(id: string, scope: string | undefined, ref: BlobRef, now: number, ttlMs: number): Promise<void> {
    const meta: BlobMeta = { ref, created_ms: now, expires_ms: now + ttlMs };
    if (scope !== undefined) meta.scope = scope;
    const tmp = path.join(this.dir, 'tmp', `${id}.json`);
    try {
      await fs.promises.writeFile(tmp, JSON.stringify(meta), { mode: 0o600 });
      await fs.promises.rename(tmp, this.metaPath(id));
    } catch (e) {
      await fs.promises.rm(tmp, { force: true });
      throw e;
    }
    // What was reserved becomes the blob's size.
    this.charge(scope, ref.size - (this.reserved.get(id) ?? 0));
    this.reserved.delete(id);
  }

  async get(id: string, now: number): Promise<(BlobMeta & { expired: boolean }) | null> {
    const meta = await this.read(id);
    return meta ? { ...meta, expired: meta.expires_ms <= now } : null;
  }

  async remove(id: string): Promise<BlobMeta | null> {
    const meta = await this.read(id);
    // Only the call that removes the file gives the bytes back, so two racing deletes count once.
    const removed = await fs.promises.unlink(this.metaPath(id)).then(() => true, () => false);
    if (!removed || !meta) return null;
    this.charge(meta.scope, -meta.ref.size);
    return meta;
  }

  async expire(now: number): Promise<string[]> {
    const out: string[] = [];
    for (const name of await fs.promises.readdir(this.dir)) {
      const m = /^(.+)\.json$/.exec(name);
      const meta = m ? await this.read(m[1]!) : null;
      if (meta && meta.expires_ms <= now && (await this.remove(m![1]!))) out.push(m![1]!);
    }
    return out;
  }

  async known(ids: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (const id of ids) if (await fs.promises.access(this.metaPath(id)).then(() => true, () => false)) out.add(id);
    return out;
  }
}

/** Stores blobs on disk with size limits and expiry; their records and the quota are in its {@link BlobLedger}. */
export class BlobStore {
  readonly dir: string;
  readonly maxBytes: number;
  readonly ttlMs: number;
  readonly quotaBytes: number;
  readonly ledger: BlobLedger;
  private readonly now: () => number;
  private ready: Promise<void> | undefined;

  constructor(opts: BlobStoreOptions) {
    this.dir = opts.dir;
    this.maxBytes = opts.maxBytes ?? 2 * 1024 ** 3;
    this.ttlMs = opts.ttlMs ?? 24 * 3600 * 1000;
    this.quotaBytes = opts.quotaBytes ?? 2 * 1024 ** 3;
    this.ledger = opts.ledger ?? new FileBlobLedger(opts.dir);
    this.now = opts.now ?? Date.now;
  }

  private init(): Promise<void> {
    this.ready ??= (async () => {
      await fs.promises.mkdir(path.join(this.dir, 'tmp'), { recursive: true, mode: 0o700 });
      await this.ledger.init();
    })();
    return this.ready;
  }

  /** Bytes `scope` holds now (live blobs not yet swept, and uploads under way). */
  async usedBytes(scope?: string): Promise<number> {
    await this.init();
    return this.ledger.used(scope);
  }

  private async overQuota(scope: string | undefined): Promise<WireError> {
    return new WireError(
      'payload_too_large',
      `The workspace's blob storage is full (quota ${this.quotaBytes} bytes); blobs are removed ${Math.round(this.ttlMs / 3_600_000)} h after upload, or upload less.`,
      { details: { quota_bytes: this.quotaBytes, used_bytes: await this.ledger.used(scope) } },
    );
  }

  private dataPath(id: string): string {
    return path.join(this.dir, `${id}.bin`);
  }

  /**
   * Streams `stream` into a new blob. Throws `payload_too_large` past `maxBytes` (or when `declaredSize`
   * already is), or past the scope's quota (expired blobs are swept first), leaving nothing behind. Nothing is
   * held whole in memory: the bytes go to a temp file as they arrive, and a refusal comes as soon as the bytes
   * read pass a limit.
   */
  async put(stream: Readable, mediaType: string, opts: { declaredSize?: number; scope?: string; signal?: AbortSignal } = {}): Promise<BlobRef> {
    await this.init();
    if (opts.declaredSize !== undefined && opts.declaredSize > this.maxBytes) {
      stream.resume();
      throw this.tooLarge();
    }
    const scope = opts.scope;
    const ledger = this.ledger;
    const id = `b_${randomBytes(16).toString('base64url')}`;
    let reserved = 0;
    const reserve = async (bytes: number): Promise<boolean> => {
      if (!(await ledger.reserve(id, scope, bytes, this.quotaBytes))) return false;
      reserved += bytes;
      return true;
    };
    // A declared size is reserved before a byte is read (expired blobs swept first when it does not fit).
    if (opts.declaredSize !== undefined && !((await reserve(opts.declaredSize)) || ((await this.sweep()) > 0 && (await reserve(opts.declaredSize))))) {
      stream.resume();
      throw await this.overQuota(scope);
    }
    const tmp = path.join(this.dir, 'tmp', `${id}.part`);
    const hash = createHash('sha256');
    let size = 0;
    const max = this.maxBytes;
    // Bytes under way count against the quota as they arrive (every `reserveEvery` bytes, and all before the
    // end), so parallel uploads, on this process or another node, cannot overrun it together.
    const counter = new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        size += chunk.length;
        if (size > max) return cb(this.tooLarge());
        const owed = size - reserved;
        if (owed <= 0 || (ledger.reserveEvery > 0 && owed < ledger.reserveEvery)) {
          hash.update(chunk);
          return cb(null, chunk);
        }
        reserve(owed).then(
          async (ok) => {
            if (!ok) return cb(await this.overQuota(scope));
            hash.update(chunk);
            cb(null, chunk);
          },
          (e: Error) => cb(e),
        );
      },
      flush: (cb) => {
        const owed = size - reserved;
        if (owed <= 0) return cb();
        reserve(owed).then(async (ok) => cb(ok ? null : await this.overQuota(scope)), (e: Error) => cb(e));
      },
    });
    const undo = async () => {
      await ledger.release(id, scope).catch(() => undefined);
      await Promise.all([tmp, this.dataPath(id)].map((f) => fs.promises.rm(f, { force: true })));
    };
    try {
      await pipeline(stream, counter, fs.createWriteStream(tmp, { flags: 'wx', mode: 0o600 }), opts.signal ? { signal: opts.signal } : {});
    } catch (e) {
      await undo();
      throw e;
    }
    const ref: BlobRef = { blob_id: id, sha256: hash.digest('hex'), size, media_type: mediaType };
    try {
      // Data first, then the record: a blob is visible only once both are in place.
      await fs.promises.rename(tmp, this.dataPath(id));
      await ledger.commit(id, scope, ref, this.now(), this.ttlMs);
    } catch (e) {
      await undo();
      throw e;
    }
    return ref;
  }

  private tooLarge(): WireError {
    return new WireError('payload_too_large', 'The blob is larger than the bridge accepts.', { details: { limit: this.maxBytes } });
  }

  /** The reference of a live blob, or null (unknown, expired, or out of `scope`). */
  async stat(id: string, scope?: string): Promise<BlobRef | null> {
    if (!ID_RE.test(id)) return null;
    await this.init();
    const meta = await this.ledger.get(id, this.now());
    if (!meta) return null;
    if (meta.expired) {
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
    await this.ledger.remove(id);
    await fs.promises.rm(this.dataPath(id), { force: true });
  }

  /** Removes expired blobs and stale partial uploads; returns how many records went. */
  async sweep(): Promise<number> {
    await this.init();
    const now = this.now();
    const gone = await this.ledger.expire(now);
    for (const id of gone) await fs.promises.rm(this.dataPath(id), { force: true });
    // Data without a record: a put that died between the data's rename and its record, or a half-deleted blob.
    const stale: string[] = [];
    for (const name of await fs.promises.readdir(this.dir)) {
      const m = /^(.+)\.bin$/.exec(name);
      if (!m) continue;
      const st = await fs.promises.stat(path.join(this.dir, name)).catch(() => null);
      if (st && now - st.mtimeMs > this.ttlMs) stale.push(m[1]!);
    }
    if (stale.length) {
      const known = await this.ledger.known(stale);
      for (const id of stale) if (!known.has(id)) await fs.promises.rm(this.dataPath(id), { force: true });
    }
    const tmpDir = path.join(this.dir, 'tmp');
    for (const name of await fs.promises.readdir(tmpDir)) {
      const st = await fs.promises.stat(path.join(tmpDir, name)).catch(() => null);
      if (st && now - st.mtimeMs > this.ttlMs) await fs.promises.rm(path.join(tmpDir, name), { force: true });
    }
    return gone.length;
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
      // A cluster node that cannot reach its database answers as its calls API does (503, Retry-After).
      fail(res, err.type === 'payload_too_large' ? 413 : err.type === 'store_unavailable' ? 503 : 500, err);
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
  sendError(res, status, e.type, e.message, e.details, { Connection: 'close', ...(status === 503 ? { 'Retry-After': String(STORE_RETRY_AFTER_S) } : {}) });
}

/** Who may use the blob routes: a device or runtime token's workspace, or null. */
export type BlobCaller = (token: string) => { workspace_id: string } | null | Promise<{ workspace_id: string } | null>;

/**
 * The blob routes as a mount (`/v1/blobs…`): a device or runtime token is required, blobs are scoped to its
 * workspace (a token of another workspace cannot read them), and every upload takes a request from the
 * token's rate limit. The single process and a cluster node serve the same mount.
 */
export function blobMount(blobs: BlobStore, caller: BlobCaller, limiter: RateLimit) {
  return async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> => {
    if (!url.pathname.startsWith('/v1/blobs')) return false;
    const t = bearer(req.headers.authorization);
    const who = t ? await caller(t) : null;
    if (!who) {
      req.resume();
      sendError(res, 401, 'unauthorized', 'A valid device or runtime token is required.');
      return true;
    }
    if (req.method === 'PUT' || req.method === 'POST') {
      const wait = await limiter.take(t!);
      if (wait > 0) {
        req.resume();
        sendError(res, 429, 'rate_limited', 'Too many requests; slow down.', { retry_after_ms: wait }, { 'Retry-After': String(Math.ceil(wait / 1000)), Connection: 'close' });
        return true;
      }
    }
    return blobs.handleHttp(req, res, url.pathname, who.workspace_id);
  };
}
