/**
 * A bridge and a real agent for the benchmarks: the agent always runs in a child process; the bridge
 * runs either in the driver's process (the driver then plays the bridge and sends invokes itself) or
 * in a child process of its own (the full path, driven over HTTP).
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalizeBridgeConfig } from '../src/config/bridge-config.js';
import { silentLogger } from '../src/base/logger.js';
import { BridgeServer } from '../src/bridge/server.js';
import { newCallId } from '../src/protocol/call-id.js';
import { benchFile, startChild, type BenchChild } from './child.js';

/** The identity the benchmark agent runs as. */
export const BENCH_IDS = { workspace_id: 'ws_bench', user_id: 'usr_bench', device_id: 'dev_bench' } as const;

/** How the agent under test is configured. */
export interface AgentSettings {
  /** The journal's `synchronous` level in WAL mode. */
  synchronous: 'normal' | 'full';
  /** `info` logs one line per call to a file, as `aios-device run` with `log.file` does; `silent` logs nothing. */
  log: 'info' | 'silent';
  /** Extra Node flags for the agent process and, where the bridge runs in its own process, the bridge (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
  /** Added to the agent child's environment. */
  env?: Record<string, string>;
  /** Added to the agent's config (e.g. grants; `handlers` sections are merged with the defaults). */
  config?: Record<string, unknown>;
  /** The agent child's script (default `BENCH_AGENT_CHILD`, else this build's bench/agent-child.js): another build's, to compare builds in one run. */
  child?: string;
  /** Runs before the agent starts, with its data folder (e.g. to fill its journal). */
  beforeStart?: (dataDir: string) => Promise<void>;
}

export interface DeviceStack {
  dir: string;
  url: string;
  runtimeToken: string;
  /** Set when the bridge runs in this process. */
  bridge: BridgeServer | undefined;
  agent: BenchChild<{ pid: number }>;
  stop(): Promise<void>;
}

function bridgeDoc(dir: string, runtime: string, device: string) {
  return {
    listen: { host: '127.0.0.1', port: 0 },
    data_dir: join(dir, 'bridge'),
    runtime_tokens: { [runtime]: { workspace_id: BENCH_IDS.workspace_id } },
    device_tokens: { [device]: { ...BENCH_IDS } },
    // The default (200/s) protects a shared bridge; the benchmark wants to find the ceiling.
    runtime_rate_limit: { per_second: 1e9, burst: 1e9 },
  };
}

/**
 * Starts a bridge (here or in a child) and an agent child connected to it; resolves once the device is online.
 * `bridgeChildFile`: another bridge-child module to run (e.g. an older checkout's, to compare bridges in one run).
 */
export async function startDeviceStack(agentSettings: AgentSettings, bridgeWhere: 'here' | 'child', bridgeChildFile?: string): Promise<DeviceStack> {
  const dir = mkdtempSync(join(tmpdir(), 'aios-bench-'));
  const runtime = 'rt_' + randomBytes(12).toString('hex');
  const device = 'dt_' + randomBytes(12).toString('hex');
  let bridge: BridgeServer | undefined;
  let bridgeChild: BenchChild<{ url: string }> | undefined;
  let agent: BenchChild<{ pid: number }> | undefined;
  const cleanup = async () => {
    await agent?.stop();
    await bridge?.stop().catch(() => undefined);
    await bridgeChild?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    let url: string;
    if (bridgeWhere === 'here') {
      bridge = new BridgeServer(normalizeBridgeConfig(bridgeDoc(dir, runtime, device)), { log: silentLogger() });
      url = await bridge.start();
    } else {
      bridgeChild = await startChild<{ url: string }>(bridgeChildFile ?? benchFile('bridge-child'), [JSON.stringify(bridgeDoc(dir, runtime, device))], agentSettings.nodeArgs ?? []);
      url = bridgeChild.info.url;
    }
    agent = await startAgentChild(agentSettings, dir, url, device);
    await waitOnline(url, runtime);
    const a = agent;
    return { dir, url, runtimeToken: runtime, bridge, agent: a, stop: cleanup };
  } catch (e) {
    await cleanup();
    throw e;
  }
}

/**
 * Starts the benchmark agent in a child process, its data in `dir`, connecting to the bridge at `bridgeUrl`
 * (http; its device socket is `/v1/device`) with `deviceToken`; resolves once the child is up (not yet online).
 */
export async function startAgentChild(agentSettings: AgentSettings, dir: string, bridgeUrl: string, deviceToken: string): Promise<BenchChild<{ pid: number }>> {
  const agentDoc = {
    bridge: { url: bridgeUrl.replace(/^http/, 'ws') + '/v1/device', token: deviceToken },
    identity: { ...BENCH_IDS, device_name: 'Bench device' },
    data_dir: join(dir, 'agent'),
    // The local endpoint runs as in production, on a free port and a socket of its own.
    local_endpoint: { host: '127.0.0.1', port: 0, socket: join(dir, `agent-${agentSettings.synchronous}.sock`) },
    journal: { synchronous: agentSettings.synchronous },
    ...(process.env['BENCH_AGENT_SLOTS'] ? { limits: { max_concurrent_calls: Number(process.env['BENCH_AGENT_SLOTS']) } } : {}),
    log: agentSettings.log === 'info' ? { level: 'info', file: join(dir, 'agent.log') } : { level: 'silent' },
    ...agentSettings.config,
    handlers: { diagnostics: { enabled: true }, ...(agentSettings.config?.['handlers'] as Record<string, unknown> | undefined) },
  };
  await agentSettings.beforeStart?.(agentDoc.data_dir);
  return startChild<{ pid: number }>(agentSettings.child || process.env['BENCH_AGENT_CHILD'] || benchFile('agent-child'), [JSON.stringify(agentDoc)], agentSettings.nodeArgs ?? [], agentSettings.env);
}

/** Polls the runtime API at `url` until the benchmark device is online and its functions are known. */
export async function waitOnline(url: string, runtime: string): Promise<void> {
  const end = Date.now() + 20_000;
  for (;;) {
    const r = await fetch(`${url}/v1/devices/${BENCH_IDS.device_id}`, { headers: { authorization: `Bearer ${runtime}` } });
    if (r.ok) {
      const d = (await r.json()) as { online?: boolean; functions?: { id: string }[] };
      if (d.online && d.functions?.some((f) => f.id === 'diagnostics.echo')) return;
    }
    if (Date.now() > end) throw new Error('the benchmark agent did not come online with diagnostics.echo');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A runtime's keep-alive client for one function through the whole path (`POST /v1/calls`, `wait: true`):
 * each call must complete with an output `ok` accepts. Each call carries its own `call_id`, so that a
 * request sent on a kept-alive socket the bridge was closing at that moment (its idle timeout; ECONNRESET
 * on a reused socket, which a busy machine makes likely) is sent once more, as Node's documentation
 * advises; the bridge replays a call it already has by its id and never runs it twice.
 */
export function runtimeCaller(stack: Pick<DeviceStack, 'url' | 'runtimeToken'>, concurrency: number, fn: string, args: unknown, ok: (output: unknown) => boolean) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL('/v1/calls', stack.url);
  const send = (body: string) =>
    new Promise<void>((resolve, reject) => {
      const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), authorization: `Bearer ${stack.runtimeToken}` };
      const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          const rec = JSON.parse(text) as { state?: string; outcome?: { output?: unknown } };
          if (res.statusCode !== 200 || rec.state !== 'completed' || !ok(rec.outcome?.output)) reject(new Error(`${fn} answered ${res.statusCode}: ${text.slice(0, 300)}`));
          else resolve();
        });
        res.on('error', reject);
      });
      req.on('error', (e: NodeJS.ErrnoException) => reject(Object.assign(e, { reusedSocket: req.reusedSocket })));
      req.end(body);
    });
  const call = async (): Promise<void> => {
    const body = JSON.stringify({ workspace_id: BENCH_IDS.workspace_id, device_id: BENCH_IDS.device_id, call_id: newCallId(), function: fn, arguments: args, wait: true });
    try {
      await send(body);
    } catch (e) {
      const err = e as NodeJS.ErrnoException & { reusedSocket?: boolean };
      if (!(err.reusedSocket && err.code === 'ECONNRESET')) throw e;
      await send(body);
    }
  };
  return { call, close: () => agent.destroy() };
}
