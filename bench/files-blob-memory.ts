/**
 * Measures the agent's memory while a 200 MB file goes through the files handler and blobs:
 * files.read_bytes (file → blob upload) and files.write_bytes (blob download → file). The bridge's blob
 * store runs in a child process behind a real HTTP server on port 0, so the figures are the agent's alone.
 * Run: node --import tsx bench/files-blob-memory.ts [sizeMiB]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { BlobStore } from '../src/bridge/blob-store.js';
import { HttpBlobClient } from '../src/agent/blob-client.js';
import type { CallContext, FunctionDefinition, Logger } from '../src/sdk/index.js';
import { standaloneTemp } from '../src/sdk/temp.js';
import { GrantStore } from '../src/grants/grant-store.js';
import handler from '../handlers/files/index.js';

const TOKEN = 'bench-token';

async function serve(dir: string): Promise<void> {
  const store = new BlobStore({ dir, maxBytes: 1024 ** 3 });
  const server = http.createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end();
    void store.handleHttp(req, res, new URL(req.url ?? '/', 'http://x').pathname);
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
}

async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const c of fs.createReadStream(file)) h.update(c as Buffer);
  return h.digest('hex');
}

async function writePattern(file: string, size: number): Promise<void> {
  const chunk = Buffer.alloc(1024 * 1024);
  const fh = await fs.promises.open(file, 'w');
  for (let off = 0, n = 0; off < size; off += chunk.length, n++) {
    chunk.fill(n & 0xff);
    await fh.write(chunk, 0, Math.min(chunk.length, size - off));
  }
  await fh.close();
}

const log: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => log };
const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

async function main(): Promise<void> {
  const sizeMiB = Number(process.argv[2] ?? 200);
  const base = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'aios-bench-'));
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve', path.join(base, 'bridge-blobs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
      child.once('exit', () => reject(new Error('blob server exited')));
    });
    const shared = path.join(base, 'Shared');
    await fs.promises.mkdir(shared);
    const src = path.join(shared, 'big.bin');
    await writePattern(src, sizeMiB * 1024 * 1024);
    const srcHash = await sha256File(src);

    const grants = new GrantStore();
    grants.registerKinds('files', handler.grantKinds ?? []);
    grants.setConfig({ files: [{ path: shared, access: 'read_write' }] });
    const defs = (await handler.create({
      grants,
      options: {},
      dataDir: path.join(base, 'agent-data'),
      log,
      appVersion: 'bench',
      listFunctions: () => [],
    })) as unknown as FunctionDefinition<Record<string, unknown>, Record<string, unknown>>[];
    const fn = (id: string) => defs.find((d) => d.descriptor.id === id)!;
    const blobs = new HttpBlobClient({ baseUrl: `http://127.0.0.1:${port}`, token: () => TOKEN });
    const ctx = (): CallContext => ({ callId: 'bench', functionId: 'bench', signal: new AbortController().signal, requester: undefined, log, blobs, progress() {}, commit() {}, resources: [], ...standaloneTemp('bench') });

    globalThis.gc?.();
    const baseline = process.memoryUsage();
    let peakRss = baseline.rss;
    let peakHeap = baseline.heapUsed;
    let peakExternal = baseline.external + baseline.arrayBuffers;
    const timer = setInterval(() => {
      const m = process.memoryUsage();
      peakRss = Math.max(peakRss, m.rss);
      peakHeap = Math.max(peakHeap, m.heapUsed);
      peakExternal = Math.max(peakExternal, m.external + m.arrayBuffers);
    }, 10);

    const t0 = Date.now();
    const read = await fn('files.read_bytes').run({ root: 'Shared', path: 'big.bin' }, ctx());
    const t1 = Date.now();
    await fn('files.write_bytes').run({ root: 'Shared', path: 'copy.bin', blob: read['blob'] }, ctx());
    const t2 = Date.now();
    clearInterval(timer);

    const ok = (await sha256File(path.join(shared, 'copy.bin'))) === srcHash && (read['blob'] as { sha256: string }).sha256 === srcHash;
    console.log(`file size:            ${sizeMiB} MiB (sha256 round trip ${ok ? 'ok' : 'MISMATCH'})`);
    console.log(`read_bytes → blob:    ${t1 - t0} ms`);
    console.log(`blob → write_bytes:   ${t2 - t1} ms`);
    console.log(`RSS baseline / peak:  ${mib(baseline.rss)} / ${mib(peakRss)} (growth ${mib(peakRss - baseline.rss)})`);
    console.log(`heapUsed base / peak: ${mib(baseline.heapUsed)} / ${mib(peakHeap)} (growth ${mib(peakHeap - baseline.heapUsed)})`);
    console.log(`external+arrayBuffers base / peak: ${mib(baseline.external + baseline.arrayBuffers)} / ${mib(peakExternal)}`);
    if (!ok) process.exitCode = 1;
  } finally {
    child.kill();
    await fs.promises.rm(base, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--serve') void serve(process.argv[3]!);
else await main();
