/**
 * One device against the bridge (issue 27, finding 2): the bridge's memory and store under a device that
 * serves the biggest list `device_limits` allows and floods `tools_changed`, reconnecting each time the
 * bridge closes its session. The bridge runs in a process of its own (bench/bridge-child.ts); RSS is read
 * from /proc/<pid>/status. Memory is measured here, not asserted in a test.
 *
 * Run: npm run bench:device-flood [-- --seconds N] [--json]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { JsonRpcPeer } from '../src/protocol/peer.js';
import { WebSocketTransport } from '../src/protocol/ws-transport.js';
import { METHODS, SUBPROTOCOL } from '../src/protocol/messages.js';
import { benchFile, isMain, positiveInt, runMain, startChild } from './child.js';
import { rssMbOf } from './idle-rss.js';

const ID = { workspace_id: 'ws_flood', user_id: 'usr_flood', device_id: 'dev_flood' };

/** A list at the default bounds: 4 pages of 128 descriptors of ~7.5 KB (about 3.9 MB in all). */
function page(n: number) {
  const functions = Array.from({ length: 128 }, (_, i) => ({ id: `flood.f${n * 128 + i}`, name: 'F', description: 'x'.repeat(7500), input_schema: { type: 'object' } }));
  return { functions, revision: 1, ...(n < 3 ? { next_cursor: String(n + 1) } : {}) };
}

/** One session: hello, answer list pages, send `tools_changed` as fast as the socket takes them; resolves with the close code. */
async function floodSession(url: string, token: string, until: number): Promise<number> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/device`, SUBPROTOCOL, { headers: { Authorization: `Bearer ${token}` } });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
  const peer = new JsonRpcPeer(new WebSocketTransport(ws, 60_000), {});
  peer.onRequest(METHODS.functionList, (p) => page(Number((p as { cursor?: string } | undefined)?.cursor ?? 0)));
  await peer.request(METHODS.hello, { protocol_version: '1.2', client: { name: 'flood', version: '9.9.9', platform: 'linux', arch: 'x64' }, device: { id: ID.device_id }, workspace_id: ID.workspace_id, user_id: ID.user_id, functions_revision: 0, limits: { max_message_bytes: 1048576, max_concurrent_calls: 8, dedupe_retention_s: 86400 } }, 10_000);
  const note = { revision: 1, added: [], removed: [], updated: [] };
  while (ws.readyState === WebSocket.OPEN && Date.now() < until) {
    for (let i = 0; i < 100; i++) peer.notify(METHODS.toolsChanged, note);
    await new Promise((r) => setImmediate(r));
  }
  if (ws.readyState === WebSocket.OPEN) ws.close();
  return closed;
}

export interface FloodResult {
  seconds: number;
  sessions: number;
  closedWith4008: number;
  rssStartMb: number;
  rssPeakMb: number;
  rssEndMb: number;
  storeBytes: number;
}

export async function floodBench(seconds: number): Promise<FloodResult> {
  const dir = mkdtempSync(join(tmpdir(), 'aios-flood-'));
  const token = 'dt_flood';
  const bridge = await startChild<{ url: string }>(benchFile('bridge-child'), [JSON.stringify({ listen: { host: '127.0.0.1', port: 0 }, data_dir: join(dir, 'bridge'), device_tokens: { [token]: ID } })]);
  try {
    const pid = bridge.proc.pid!;
    const rssStartMb = rssMbOf(pid);
    let rssPeakMb = rssStartMb;
    const sampler = setInterval(() => (rssPeakMb = Math.max(rssPeakMb, rssMbOf(pid))), 100);
    const until = Date.now() + seconds * 1000;
    let sessions = 0;
    let closedWith4008 = 0;
    while (Date.now() < until) {
      sessions++;
      if ((await floodSession(bridge.info.url, token, until)) === 4008) closedWith4008++;
    }
    clearInterval(sampler);
    const rssEndMb = rssMbOf(pid);
    await bridge.stop();
    const db = join(dir, 'bridge', 'bridge.sqlite');
    const storeBytes = ['', '-wal'].reduce((n, s) => n + (statSafe(db + s) ?? 0), 0);
    return { seconds, sessions, closedWith4008, rssStartMb, rssPeakMb: Math.max(rssPeakMb, rssEndMb), rssEndMb, storeBytes };
  } finally {
    await bridge.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function statSafe(p: string): number | undefined {
  try {
    return statSync(p).size;
  } catch {
    return undefined;
  }
}

if (isMain(import.meta.url)) {
  runMain('device-flood', async () => {
    const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, json: { type: 'boolean', default: false } } });
    const r = await floodBench(positiveInt(values.seconds, 'seconds'));
    if (values.json) process.stdout.write(JSON.stringify(r) + '\n');
    else {
      process.stdout.write(`device flood for ${r.seconds} s: ${r.sessions} sessions, ${r.closedWith4008} closed with 4008 (device_limits_exceeded)\n`);
      process.stdout.write(`bridge RSS: start ${r.rssStartMb.toFixed(1)} MB, peak ${r.rssPeakMb.toFixed(1)} MB, end ${r.rssEndMb.toFixed(1)} MB; bridge.sqlite (+ WAL) ${(r.storeBytes / 1e6).toFixed(1)} MB\n`);
    }
  });
}
