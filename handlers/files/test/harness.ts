/**
 * Test harness for the files handler: real temp folders, a fake CallContext with a real AbortController,
 * and a BlobClient backed by the real blob store over a real HTTP server on port 0.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { BlobClient, CallContext, CallResource, FunctionDefinition, HandlerEnv, Logger, Progress } from '../../../src/sdk/index.js';
import { standaloneTemp } from '../../../src/sdk/temp.js';
import { GrantStore } from '../../../src/grants/grant-store.js';
import { BlobStore } from '../../../src/bridge/blob-store.js';
import { HttpBlobClient } from '../../../src/agent/blob-client.js';
import handler from '../index.js';

/** A logger that records nothing (the handler must not log contents anyway). */
export const nullLog: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => nullLog };

/** A blob client that refuses: for tests that must not touch blobs. */
export const noBlobs: BlobClient = {
  uploadFile: () => Promise.reject(new Error('no blobs in this test')),
  downloadToFile: () => Promise.reject(new Error('no blobs in this test')),
};

/** A call context with a real AbortController. */
export interface FakeCtx extends CallContext {
  readonly controller: AbortController;
  committed: boolean;
  readonly progressSeen: Progress[];
}

/** Builds a call context; `onProgress` lets a test act in the middle of a call (e.g. abort it). */
export function fakeCtx(opts: { blobs?: BlobClient; onProgress?: (p: Progress, ctx: FakeCtx) => void; functionId?: string } = {}): FakeCtx {
  const controller = new AbortController();
  const ctx: FakeCtx = {
    callId: `call-${Math.random().toString(36).slice(2)}`,
    functionId: opts.functionId ?? 'files.test',
    signal: controller.signal,
    requester: undefined,
    log: nullLog,
    blobs: opts.blobs ?? noBlobs,
    controller,
    committed: false,
    progressSeen: [],
    resources: [],
    ...standaloneTemp('files-test'),
    progress(p) {
      ctx.progressSeen.push(p);
      opts.onProgress?.(p, ctx);
    },
    commit() {
      ctx.committed = true;
    },
  };
  return ctx;
}

/** A temp folder tree: `outside/` with a sentinel, and the shared roots under `shared/`. */
export interface World {
  readonly base: string;
  readonly outside: string;
  readonly sentinel: string;
  readonly docs: string;
  readonly ro: string;
  readonly dataDir: string;
  cleanup(): Promise<void>;
}

/** Creates a fresh world. Paths are real (tmpdir may itself be a link, e.g. on macOS). */
export async function makeWorld(): Promise<World> {
  const base = await fs.promises.realpath(await fs.promises.mkdtemp(path.join(os.tmpdir(), 'aios-files-')));
  const outside = path.join(base, 'outside');
  const docs = path.join(base, 'shared', 'Documents');
  const ro = path.join(base, 'shared', 'ReadOnly');
  const dataDir = path.join(base, 'data');
  for (const d of [outside, docs, ro, dataDir]) await fs.promises.mkdir(d, { recursive: true });
  const sentinel = path.join(outside, 'secret.txt');
  await fs.promises.writeFile(sentinel, 'TOP SECRET\n');
  await fs.promises.writeFile(path.join(ro, 'readme.txt'), 'read only\n');
  return { base, outside, sentinel, docs, ro, dataDir, cleanup: () => fs.promises.rm(base, { recursive: true, force: true }) };
}

/** The config's `grants` section, as a test writes it. */
export type Grants = Record<string, unknown[]>;

/** A live grant store with the files kind over a `grants` section (throws naming a bad key). */
export function grantStore(grants: Grants, dataDir?: string): GrantStore {
  const store = new GrantStore({ dataDir });
  store.registerKinds('files', handler.grantKinds ?? []);
  const problems = store.setConfig(grants);
  if (problems.length) throw new Error(problems.join('; '));
  return store;
}

/** The resources a call names (as the host resolves them before consent). */
export async function resourcesOf(fn: FunctionDefinition<Record<string, unknown>, unknown>, args: Record<string, unknown>, store: GrantStore): Promise<readonly CallResource[]> {
  return fn.resources ? await fn.resources(args, { grants: store }) : [];
}

/** The lock keys the host takes for a call (`${kind}:${id}` unless a resource says otherwise). */
export async function lockKeys(fn: FunctionDefinition<Record<string, unknown>, unknown>, args: Record<string, unknown>, store: GrantStore): Promise<string[]> {
  if (!fn.resources) return [...fn.descriptor.locks];
  return (await resourcesOf(fn, args, store)).flatMap((r) => (r.lock === false ? [] : [r.lock ?? `${r.kind}:${r.id}`]));
}

/** Default grants for a world. */
export function worldGrants(w: World): Grants {
  return {
    files: [
      { path: w.docs, access: 'read_write' },
      { path: w.ro, access: 'read' },
    ],
  };
}

/** The handler's functions by id. */
export type Fns = Map<string, FunctionDefinition<Record<string, unknown>, unknown>>;

/** Creates the handler as the host would. */
export async function makeFns(w: World, opts: { grants?: Grants; store?: GrantStore; options?: Record<string, unknown> } = {}): Promise<Fns> {
  const env: HandlerEnv = {
    grants: opts.store ?? grantStore(opts.grants ?? worldGrants(w)),
    options: opts.options ?? {},
    dataDir: w.dataDir,
    log: nullLog,
    appVersion: '0.0.0-test',
    listFunctions: () => [],
  };
  const defs = (await handler.create(env)) as unknown as FunctionDefinition<Record<string, unknown>, unknown>[];
  return new Map(defs.map((d) => [d.descriptor.id, d]));
}

/** Runs a function by id. */
export async function call(fns: Fns, id: string, args: Record<string, unknown>, ctx: FakeCtx = fakeCtx()): Promise<Record<string, unknown>> {
  const fn = fns.get(id);
  if (!fn) throw new Error(`no function ${id}`);
  return (await fn.run(args, ctx)) as Record<string, unknown>;
}

/** A content fingerprint of every entry below `dir` (names, types, sizes, hashes, link targets). */
export async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  async function walk(d: string, rel: string): Promise<void> {
    for (const e of await fs.promises.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      const st = await fs.promises.lstat(p);
      if (e.isSymbolicLink()) out.set(r, `link:${await fs.promises.readlink(p)}`);
      else if (e.isDirectory()) {
        out.set(r, 'dir');
        await walk(p, r);
      } else if (e.isFile()) out.set(r, `file:${st.size}:${st.mtimeMs}:${createHash('sha256').update(await fs.promises.readFile(p)).digest('hex')}`);
      else out.set(r, 'other');
    }
  }
  await walk(dir, '');
  return out;
}

/** A real blob store behind a real HTTP server on port 0, and a client for it. */
export async function startBlobServer(dir: string, opts: { maxBytes?: number } = {}): Promise<{ store: BlobStore; client: HttpBlobClient; url: string; close(): Promise<void> }> {
  const store = new BlobStore({ dir, ...(opts.maxBytes !== undefined ? { maxBytes: opts.maxBytes } : {}) });
  const server = http.createServer((req, res) => {
    if (req.headers.authorization !== 'Bearer test-token') {
      res.writeHead(401).end();
      return;
    }
    const { pathname } = new URL(req.url ?? '/', 'http://x');
    void store.handleHttp(req, res, pathname).then((handled) => {
      if (!handled) res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new HttpBlobClient({ baseUrl: url, token: () => 'test-token' });
  return {
    store,
    client,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Writes `size` bytes of a repeating pseudo-random pattern to `file` without holding it in memory. */
export async function writeBigFile(file: string, size: number): Promise<string> {
  const chunk = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 2654435761) >>> 24;
  const hash = createHash('sha256');
  const fh = await fs.promises.open(file, 'w');
  try {
    let left = size;
    let n = 0;
    while (left > 0) {
      const part = chunk.subarray(0, Math.min(left, chunk.length));
      part[0] = n++ & 0xff;
      hash.update(part);
      await fh.write(part);
      left -= part.length;
    }
  } finally {
    await fh.close();
  }
  return hash.digest('hex');
}

/** SHA-256 of a file, streamed. */
export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const c of fs.createReadStream(file)) hash.update(c as Buffer);
  return hash.digest('hex');
}
