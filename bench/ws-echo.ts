/**
 * The floor: a raw `ws` echo on loopback with the same frame sizes as an invoke and its outcome. The
 * server runs in a child process (like the agent) and answers each frame with a fixed frame of the
 * response's size, copying the request's JSON-RPC id so that the client can correlate with 64 in flight.
 * Server mode: node --import tsx bench/ws-echo.ts --serve <responseBytes>
 */
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import { announceReady, exitOnSignal, isMain, startChild } from './child.js';
import type { BenchTarget } from './stats.js';

/** A JSON text of exactly `bytes` bytes carrying `id` (padded with a filler field). */
function frame(id: number, bytes: number): string {
  const head = `{"jsonrpc":"2.0","id":${id},"pad":"`;
  const tail = '"}';
  return head + 'x'.repeat(Math.max(0, bytes - head.length - tail.length)) + tail;
}

function serve(responseBytes: number): void {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      // Parse like a JSON-RPC peer would, so the floor includes one parse and one stringify per side.
      const { id } = JSON.parse(data.toString()) as { id: number };
      ws.send(frame(id, responseBytes));
    });
  });
  wss.on('listening', () => announceReady({ port: (wss.address() as AddressInfo).port }));
  exitOnSignal(() => new Promise<void>((r) => wss.close(() => r())));
}

/**
 * The bench's minimal client: each call sends the frame `request(id)` on `ws` and resolves when a frame
 * with that JSON-RPC `id` comes back (frames without an id, e.g. notifications, are parsed and dropped).
 */
export function idCaller(ws: WebSocket, request: (id: number) => string): () => Promise<void> {
  const pending = new Map<number, () => void>();
  ws.on('message', (data) => {
    const { id } = JSON.parse(String(data)) as { id?: number };
    if (id === undefined) return;
    pending.get(id)?.();
    pending.delete(id);
  });
  let next = 1;
  return () =>
    new Promise<void>((resolve) => {
      const id = next++;
      pending.set(id, resolve);
      ws.send(request(id));
    });
}

/** Opens the echo target with the given request and response frame sizes. */
export async function openWsEcho(frames: { request: number; response: number }): Promise<BenchTarget> {
  const child = await startChild<{ port: number }>(fileURLToPath(import.meta.url), ['--serve', String(frames.response)]);
  const ws = new WebSocket(`ws://127.0.0.1:${child.info.port}`);
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
  } catch (e) {
    await child.stop();
    throw e;
  }
  return {
    name: 'raw ws echo',
    call: idCaller(ws, (id) => frame(id, frames.request)),
    async close() {
      ws.close();
      await child.stop();
    },
    notes: { request_bytes: frames.request, response_bytes: frames.response },
  };
}

if (isMain(import.meta.url) && process.argv[2] === '--serve') serve(Number(process.argv[3] ?? 512));
