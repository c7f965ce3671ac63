/**
 * Photo latency of the media handler: camera.capture_photo (640×480 JPEG, ffmpeg backend) from the
 * call's start until its blob is uploaded to a real blob store over HTTP, against ffmpeg alone grabbing
 * the same frame from the same source into a file, measured in the same run, reported as a ratio. The
 * source is a lavfi test pattern standing in for the camera (no camera on these machines). The consent
 * prompt is not part of it (a person answers that). Rounds alternate the two so load affects both alike.
 * Run: node --import tsx bench/media-photo.ts [rounds]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BlobStore } from '../src/bridge/blob-store.js';
import { HttpBlobClient } from '../src/agent/blob-client.js';
import type { CallContext, FunctionDefinition, GrantsView, HandlerEnv, HandlerInstance, Logger } from '../src/sdk/index.js';
import { standaloneTemp } from '../src/sdk/temp.js';
import handler from '../handlers/media/index.js';
import { isMain, positiveInt, runMain } from './child.js';

const run = promisify(execFile);
const TOKEN = 'bench-token';
const log: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => log };
// The same frame source for both sides, without -re (real-time pacing would only add the frame interval).
const SOURCE = { kind: 'camera' as const, id: 'lavfi-camera', label: 'Test camera (lavfi testsrc)', format: 'lavfi', input: 'testsrc=size=640x480:rate=30' };

/** Median of a list of numbers. */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Result of one bench run (ms). */
export interface MediaPhotoReport {
  rounds: number;
  handlerMs: number;
  ffmpegMs: number;
  ratio: number;
}

/** Runs `rounds` alternating measurements and returns the medians and their ratio. */
export async function benchMediaPhoto(rounds = 15): Promise<MediaPhotoReport> {
  const base = await mkdtemp(join(tmpdir(), 'aios-bench-media-'));
  const store = new BlobStore({ dir: join(base, 'blobs'), maxBytes: 1024 ** 3 });
  const server = http.createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end();
    void store.handleHttp(req, res, new URL(req.url ?? '/', 'http://x').pathname);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  let temp: ReturnType<typeof standaloneTemp> | undefined;
  try {
    const blobs = new HttpBlobClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: () => TOKEN });
    const grants: GrantsView = { list: (k) => (k === 'cameras' ? [{ kind: 'cameras', id: '*' }] : []), find: () => undefined, on: () => undefined, off: () => undefined };
    temp = standaloneTemp('bench');
    const t = temp;
    const env: HandlerEnv = { grants, options: { backend: 'ffmpeg', probe: false, devices: [SOURCE] }, dataDir: base, log, appVersion: '0', listFunctions: () => [] };
    const fns = ((await handler.create(env)) as HandlerInstance).functions as FunctionDefinition[];
    const photo = fns.find((f) => f.descriptor.id === 'camera.capture_photo')!;
    const ctx = (): CallContext => ({ callId: `bench-${Math.random()}`, functionId: 'camera.capture_photo', signal: new AbortController().signal, requester: undefined, log, blobs, resources: [], progress() {}, commit() {}, tempFile: (e) => t.tempFile(e), tempDir: () => t.tempDir() });
    const viaHandler = async () => {
      const t = performance.now();
      const out = (await photo.run({ format: 'jpeg' } as never, ctx())) as { width: number; height: number };
      if (out.width !== 640 || out.height !== 480) throw new Error(`unexpected photo size ${out.width}×${out.height}`);
      return performance.now() - t;
    };
    const ffmpegAlone = async (i: number) => {
      const out = join(base, `alone-${i}.jpg`);
      const t = performance.now();
      await run('ffmpeg', ['-hide_banner', '-nostdin', '-y', '-loglevel', 'error', '-f', SOURCE.format, '-i', SOURCE.input, '-frames:v', '1', '-c:v', 'mjpeg', '-q:v', '5', out]);
      return performance.now() - t;
    };
    await viaHandler();
    await ffmpegAlone(-1);
    const h: number[] = [];
    const f: number[] = [];
    for (let i = 0; i < rounds; i++) {
      h.push(await viaHandler());
      f.push(await ffmpegAlone(i));
    }
    const handlerMs = median(h);
    const ffmpegMs = median(f);
    return { rounds, handlerMs, ffmpegMs, ratio: handlerMs / ffmpegMs };
  } finally {
    await temp?.close();
    await new Promise<void>((r) => server.close(() => r()));
    await rm(base, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  runMain('media-photo', async () => {
    const rounds = process.argv[2] ? positiveInt(process.argv[2], 'rounds') : 15;
    const r = await benchMediaPhoto(rounds);
    process.stdout.write(
      `640×480 JPEG photo, median of ${r.rounds} rounds (lavfi source standing in for the camera)\n` +
        `  camera.capture_photo request → blob uploaded: ${r.handlerMs.toFixed(1)} ms\n` +
        `  ffmpeg alone, same frame to a file:          ${r.ffmpegMs.toFixed(1)} ms\n` +
        `  ratio: ${r.ratio.toFixed(2)}×\n`,
    );
  });
}
