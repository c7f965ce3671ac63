/**
 * The full path's floor (issue 34): what a bridge between a runtime's HTTP `POST /v1/calls` (`wait: true`)
 * and the real agent costs with nothing but its duties. A `node:http` server in its own process takes the
 * same request the full path's runtime client sends (same keep-alive client, bench/device-stack.ts
 * `runtimeCaller`), forwards it as `aios/function.invoke` over the device WebSocket to the real agent (a
 * child that connects to it as to a bridge: the hello is answered, nothing else of a session is kept)
 * and answers the HTTP request with the outcome. No auth, schema checks, rate limit, timeline, events,
 * deadlines, device registry, logging or metrics: the gap between this and the full path is the
 * reference bridge's, the gap between this and MCP is the design's (HTTP in front of a WebSocket hop).
 *
 * Variants, measured in the same run:
 * - `none`: no storage at all (a crash loses the call);
 * - `sqlite`: one better-sqlite3 insert of the call before it is forwarded and one update of its outcome
 *   before the answer, each its own commit (WAL, synchronous NORMAL, the file shared as the bridge's is):
 *   the "no call record lost in a crash" duty;
 * - `echo`: a bare HTTP echo (same server and client, a canned answer of the outcome's size): HTTP alone.
 *
 * Child mode: node bench/bridge-floor.js --serve <none|sqlite|echo> <responseBytes> <dbFile>
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { openDatabase } from '../src/storage/sqlite.js';
import { negotiateProtocolVersion } from '../src/bridge/versions.js';
import { METHODS, SUBPROTOCOL } from '../src/protocol/messages.js';
import { ECHO_CALL, ECHO_VALUE } from './agent-roundtrip.js';
import { announceReady, exitOnSignal, isMain, startChild, type BenchChild } from './child.js';
import { BENCH_IDS, runtimeCaller, startAgentChild, waitOnline, type AgentSettings } from './device-stack.js';
import type { BenchTarget } from './stats.js';

/** What the floor keeps of a call: nothing, its record in SQLite, or (`echo`) no agent at all. */
export type BridgeFloorVariant = 'none' | 'sqlite' | 'echo';

const NAMES: Record<BridgeFloorVariant, string> = {
  none: 'full path floor (HTTP → ws → agent, no storage)',
  sqlite: 'full path floor (HTTP → ws → agent, 2 SQLite commits)',
  echo: 'HTTP echo (node:http keep-alive)',
};

interface SubmitBody {
  workspace_id: string;
  device_id: string;
  call_id: string;
  function: string;
  arguments: unknown;
}

function serve(variant: BridgeFloorVariant, responseBytes: number, dbFile: string): void {
  const db = variant === 'sqlite' ? openDatabase(dbFile, 'NORMAL') : undefined;
  db?.exec(`CREATE TABLE IF NOT EXISTS calls (
    workspace_id TEXT NOT NULL, call_id TEXT NOT NULL, device_id TEXT NOT NULL, function TEXT NOT NULL,
    params TEXT NOT NULL, state TEXT NOT NULL, outcome TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, call_id))`);
  const insert = db?.prepare('INSERT INTO calls (workspace_id, call_id, device_id, function, params, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, \'sent\', ?, ?)');
  const update = db?.prepare('UPDATE calls SET state = ?, outcome = ?, updated_at = ? WHERE workspace_id = ? AND call_id = ?');

  let device: WebSocket | undefined;
  let nextId = 1;
  const pending = new Map<number, (result: { state?: string } | undefined, text: string) => void>();
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (offered) => (offered.has(SUBPROTOCOL) ? SUBPROTOCOL : false) });
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      const m = JSON.parse(String(data)) as { id?: number; method?: string; params?: { protocol_version?: unknown; outcomes?: { call_id: string }[] }; result?: { state?: string } };
      if (m.method === undefined) {
        // A response to an invoke.
        const done = pending.get(m.id!);
        pending.delete(m.id!);
        done?.(m.result, m.result ? JSON.stringify(m.result) : String(data));
        return;
      }
      if (m.id === undefined) return; // a notification (call_state, progress): nothing to keep
      let result: unknown = {};
      if (m.method === METHODS.hello) {
        result = { session_id: 'ses_floor', protocol_version: negotiateProtocolVersion(m.params?.protocol_version) ?? '1.0', server_time: new Date().toISOString(), heartbeat_ms: 20_000, lease_ms: 0, min_client_version: '0.0.0' };
        device = ws;
      } else if (m.method === METHODS.callReport) result = { accepted: (m.params?.outcomes ?? []).map((o) => o.call_id) };
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
    });
    ws.on('close', () => {
      if (device === ws) device = undefined;
    });
  });

  const answer = (res: http.ServerResponse, status: number, body: string) => res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  const canned = (() => {
    const head = `{"state":"completed","outcome":{"output":{"value":${JSON.stringify(ECHO_VALUE)}},"pad":"`;
    return head + 'x'.repeat(Math.max(0, responseBytes - head.length - 3)) + '"}}';
  })();
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    if (req.method === 'GET' && req.url === `/v1/devices/${BENCH_IDS.device_id}`) {
      return answer(res, 200, JSON.stringify({ online: device !== undefined, functions: [{ id: 'diagnostics.echo' }] }));
    }
    if (req.method !== 'POST' || req.url !== '/v1/calls') return answer(res, 404, '{"error":{"type":"not_found"}}');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (variant === 'echo') return answer(res, 200, canned);
      const b = JSON.parse(Buffer.concat(chunks).toString()) as SubmitBody;
      const ws = device;
      if (!ws) return answer(res, 409, '{"error":{"type":"device_offline"}}');
      const params = { call_id: b.call_id, function: b.function, arguments: b.arguments, workspace_id: b.workspace_id, user_id: BENCH_IDS.user_id, device_id: b.device_id, timeout_ms: 30_000, attempt: 1 };
      const paramsText = JSON.stringify(params);
      if (insert) {
        const now = new Date().toISOString();
        insert.run(b.workspace_id, b.call_id, b.device_id, b.function, paramsText, now, now);
      }
      const id = nextId++;
      pending.set(id, (outcome, text) => {
        if (!outcome) return answer(res, 502, `{"error":{"type":"device_error","message":${JSON.stringify(text.slice(0, 200))}}}`);
        const state = outcome.state ?? 'unknown';
        update?.run(state, text, new Date().toISOString(), b.workspace_id, b.call_id);
        answer(res, 200, `{"call_id":${JSON.stringify(b.call_id)},"state":${JSON.stringify(state)},"outcome":${text}}`);
      });
      ws.send(`{"jsonrpc":"2.0","id":${id},"method":"${METHODS.invoke}","params":${paramsText}}`);
    });
  });
  server.on('upgrade', (req, socket, head) => {
    if (req.url !== '/v1/device') return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  server.listen(0, '127.0.0.1', () => announceReady({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  exitOnSignal(
    () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        server.closeAllConnections();
        server.close(() => {
          db?.close();
          r();
        });
      }),
  );
}

/** A floor target; `dbFile` (the `sqlite` variant's database) is kept until `close`, for a test to read. */
export type BridgeFloorTarget = BenchTarget & { dbFile: string };

/**
 * Opens one variant of the floor: its server child and (except `echo`) a real agent child connected to it;
 * `concurrency` keep-alive sockets. `responseBytes`: the echo's canned answer size (the agent's outcome's).
 */
export async function openBridgeFloor(settings: AgentSettings, concurrency: number, variant: BridgeFloorVariant, responseBytes: number): Promise<BridgeFloorTarget> {
  const dir = mkdtempSync(join(tmpdir(), 'aios-bench-bfloor-'));
  const dbFile = join(dir, 'floor.db');
  let agent: BenchChild<{ pid: number }> | undefined;
  let server: BenchChild<{ url: string }> | undefined;
  const stop = async () => {
    await agent?.stop();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    server = await startChild<{ url: string }>(fileURLToPath(import.meta.url), ['--serve', variant, String(responseBytes), dbFile], settings.nodeArgs ?? []);
    const url = server.info.url;
    if (variant !== 'echo') {
      agent = await startAgentChild(settings, dir, url, 'dt_floor');
      await waitOnline(url, 'rt_floor');
    }
    const caller = runtimeCaller({ url, runtimeToken: 'rt_floor' }, concurrency, ECHO_CALL.function, ECHO_CALL.arguments, ECHO_CALL.ok);
    return {
      name: NAMES[variant],
      call: caller.call,
      dbFile,
      async close() {
        caller.close();
        await stop();
      },
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

if (isMain(import.meta.url) && process.argv[2] === '--serve') {
  const v = process.argv[3];
  serve(v === 'sqlite' || v === 'echo' ? v : 'none', Number(process.argv[4] ?? 512), process.argv[5]!);
}
