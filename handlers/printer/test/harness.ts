/**
 * Test harness for the printer handler: the handler created as the host creates it, a call context with
 * a real AbortController, and a real blob store behind a real HTTP server on port 0.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createHash, randomFillSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { WireError, type AnyFunctionDefinition, type BlobClient, type BlobRef, type CallContext, type FunctionDefinition, type GrantsView, type HandlerEnv, type Logger, type Progress } from '../../../src/sdk/index.js';
import { BlobStore } from '../../../src/bridge/blob-store.js';
import { HttpBlobClient } from '../../../src/agent/blob-client.js';
import handler from '../index.js';
import { findGrant, normalizeGrant, type PrinterGrantEntry } from '../grants.js';

/** Log lines the handler wrote, to check that no document content leaks. */
export const logLines: string[] = [];
/** A logger that records what it is given. */
export const recLog: Logger = {
  debug: (o, m) => void logLines.push(JSON.stringify(o) + ' ' + (m ?? '')),
  info: (o, m) => void logLines.push(JSON.stringify(o) + ' ' + (m ?? '')),
  warn: (o, m) => void logLines.push(JSON.stringify(o) + ' ' + (m ?? '')),
  error: (o, m) => void logLines.push(JSON.stringify(o) + ' ' + (m ?? '')),
  child: () => recLog,
};

const temps: string[] = [];
process.once('exit', () => temps.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
async function callTemp(): Promise<string> {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'aios-printer-call-'));
  temps.push(d);
  return d;
}

function tempData(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'aios-printer-data-'));
  temps.push(d);
  return d;
}

/** A call context with a real AbortController and captured progress. */
export interface TestCtx extends CallContext {
  readonly controller: AbortController;
  readonly progressSeen: Progress[];
}

/** Builds a call context; `onProgress` lets a test act mid-call (e.g. abort it). */
export function ctxFor(blobs: BlobClient, onProgress?: (p: Progress, ctx: TestCtx) => void): TestCtx {
  const controller = new AbortController();
  const ctx: TestCtx = {
    callId: `call-${Math.random().toString(36).slice(2)}`,
    functionId: 'printer.test',
    signal: controller.signal,
    requester: undefined,
    log: recLog,
    blobs,
    resources: [],
    controller,
    progressSeen: [],
    // Per-call temp space, as the host gives it; removed when the test process ends.
    tempFile: async (ext = '') => path.join(await callTemp(), `file${ext}`),
    tempDir: callTemp,
    progress(p) {
      ctx.progressSeen.push(p);
      onProgress?.(p, ctx);
    },
    commit() {},
  };
  return ctx;
}

/** The handler's functions by id. */
export type Fns = Map<string, FunctionDefinition<Record<string, unknown>, unknown>>;

/** Creates the handler with these grants and options. */
export async function makeFns(grants: PrinterGrantEntry[], options: Record<string, unknown> = {}, dataDir = tempData()): Promise<Fns> {
  const list = grants.map(normalizeGrant);
  // The grant store's view, reduced to what this handler reads (the real store is tested by the kit).
  const view: GrantsView = { list: (k) => (k === 'printers' ? list : []), find: (k, n) => (k === 'printers' ? findGrant(list, n) : undefined), on: () => undefined, off: () => undefined };
  const env: HandlerEnv = { grants: view, options, dataDir, log: recLog, appVersion: '0.0.0-test', listFunctions: () => [] };
  const created = await handler.create(env);
  const defs = (Array.isArray(created) ? created : (created as { functions: readonly AnyFunctionDefinition[] }).functions) as unknown as FunctionDefinition<Record<string, unknown>, unknown>[];
  return new Map(defs.map((d) => [d.descriptor.id, d]));
}

/** A blob server and client. */
export interface Blobs {
  client: HttpBlobClient;
  put(file: string, mediaType: string): Promise<BlobRef>;
  close(): Promise<void>;
}

/** A real blob store over HTTP on port 0. */
export async function startBlobs(): Promise<Blobs> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aios-printer-blobs-'));
  const store = new BlobStore({ dir });
  const server = http.createServer((req, res) => {
    const { pathname } = new URL(req.url ?? '/', 'http://x');
    void store.handleHttp(req, res, pathname).then((handled) => {
      if (!handled) res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new HttpBlobClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: () => 't' });
  return {
    client,
    put: (file, mt) => client.uploadFile(file, mt),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
        fs.rmSync(dir, { recursive: true, force: true });
      }),
  };
}

/** Runs a function by id. */
export async function call(fns: Fns, id: string, args: Record<string, unknown>, ctx: TestCtx): Promise<Record<string, unknown>> {
  const fn = fns.get(id);
  if (!fn) throw new Error(`no function ${id}`);
  return (await fn.run(args, ctx)) as Record<string, unknown>;
}

/** Asserts a promise fails with a WireError of this type (and reason, if given); returns the error. */
export async function failsWith(p: Promise<unknown>, type: string, reason?: string): Promise<WireError> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof WireError, `expected a WireError ${type}, got ${String(err)}`);
  assert.equal(err.type, type, err.message);
  if (reason) assert.equal(err.details?.['reason'], reason, JSON.stringify(err.details));
  return err;
}

/** SHA-256 of a file. */
export const sha = (f: string) => createHash('sha256').update(fs.readFileSync(f)).digest('hex');

/** Runs a tool and returns stdout (throws with stderr on failure). */
export function tool(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  return r.stdout;
}

/** A small real PDF with `pages` pages (made by pdfkit, as a user's PDF would be). */
export async function makePdf(file: string, pages: number, filler = 0): Promise<void> {
  const { default: PDFDocument } = await import('pdfkit');
  const doc = new PDFDocument({ size: 'A4', compress: false });
  const ws = fs.createWriteStream(file);
  const done = new Promise<void>((r) => ws.on('finish', () => r()));
  doc.pipe(ws);
  for (let i = 0; i < pages; i++) {
    if (i > 0) doc.addPage();
    doc.text(`Page ${i + 1}`);
  }
  // A noise image (incompressible) makes the file about `filler` bytes bigger, as a scanned page would.
  if (filler > 0) {
    const { PNG } = await import('pngjs');
    const side = Math.ceil(Math.sqrt(filler / 3));
    const png = new PNG({ width: side, height: side, colorType: 2 });
    randomFillSync(png.data);
    for (let i = 3; i < png.data.length; i += 4) png.data[i] = 255;
    doc.image(PNG.sync.write(png, { colorType: 2 }), 50, 100, { width: 300 });
  }
  doc.end();
  await done;
}

/** Job attributes as the printer holds them, read with ipptool (independent of this handler's IPP code). */
export function jobAttrsByIpptool(uri: string, jobId: number, dir: string): Record<string, string> {
  const test = path.join(dir, 'get-job.test');
  fs.writeFileSync(
    test,
    `{\n OPERATION Get-Job-Attributes\n GROUP operation-attributes-tag\n ATTR charset attributes-charset utf-8\n ATTR naturalLanguage attributes-natural-language en\n ATTR uri printer-uri $uri\n ATTR integer job-id ${jobId}\n ATTR keyword requested-attributes all\n STATUS successful-ok\n}\n`,
  );
  const out = tool('ipptool', ['-tv', uri, test]);
  const attrs: Record<string, string> = {};
  for (const m of out.matchAll(/^\s+([a-z0-9-]+) \([^)]*\) = (.*)$/gm)) attrs[m[1]!] = m[2]!;
  return attrs;
}
