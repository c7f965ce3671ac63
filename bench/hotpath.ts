/**
 * The agent's main-thread cost per call (issue 21 item 3, issue 32 item 3): bursts of calls, 64 in flight,
 * through the real bridge and agent; prints the agent process's CPU µs per call (from /proc) and the bytes
 * its heap allocated per call (a v8.GCProfiler in the child, `hotpath-alloc.mjs`, started and stopped by
 * SIGUSR2 around the measured burst). The call is the no-op `diagnostics.echo`, or `device.info` (`--fn
 * device.info`: the call issue 32's "≤ 8 KB allocated per call" is stated for).
 * `--heap-prof FILE` also records the measured burst with V8's sampling heap profiler into FILE; `node
 * bench/heap-top.mjs FILE CALLS` then says which functions allocated the bytes.
 * `--baselines` also measures the protocol floor 1.1 (answering with the call's response size) and the MCP SDK's
 * server the same way: what a process doing only the protocol's duties, and MCP's, allocate per call.
 * Run: node --import tsx bench/hotpath.ts [calls] [--fn diagnostics.echo|device.info] [--heap-prof FILE] [--baselines] [-- node flags for the agent]
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEVICE_INFO_CALL, ECHO_CALL, openAgentRoundtrip, type RoundtripCall } from './agent-roundtrip.js';
import { until } from '../test/helpers/wait.js';
import { isMain, runMain } from './child.js';
import { openProtocolFloor } from './protocol-floor.js';
import { openMcpStdio } from './mcp-stdio.js';

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]);
}

/** What one hot-path run measured. */
export interface HotpathResult {
  function: string;
  calls: number;
  agent_cpu_us_per_call: number;
  bytes_per_call: number;
  calls_per_s: number;
  /** The size of the call's response frame (what a baseline answers with). */
  response_bytes: number;
}

/** The calls this benchmark knows by function id. */
export const HOTPATH_CALLS: Record<string, RoundtripCall> = { [ECHO_CALL.function]: ECHO_CALL, [DEVICE_INFO_CALL.function]: DEVICE_INFO_CALL };

/** The preload that measures a child's allocations (plain JS beside this file's source: tsc does not copy it into dist/). */
const ALLOC_PRELOAD = join(dirname(fileURLToPath(import.meta.url).replace(/[/\\]dist([/\\]bench)/, '$1')), 'hotpath-alloc.mjs');

/** 64 calls in flight until `n` have been made. */
async function burst(call: () => Promise<unknown>, n: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (next++ < n) await call();
  }));
}

/**
 * The child `pid` (started with `--import ALLOC_PRELOAD` and `HP_ALLOC_OUT=out`) through one warm-up burst of
 * 1000 calls, then `calls` measured ones: its heap bytes allocated, its CPU ticks and the wall time of those.
 */
async function measureChild(call: () => Promise<unknown>, pid: () => number, out: string, calls: number): Promise<{ bytes: number; ticks: number; ms: number }> {
  await burst(call, 1000);
  const p = pid();
  process.kill(p, 'SIGUSR2');
  const c0 = cpuTicks(p);
  const w0 = performance.now();
  await burst(call, calls);
  const w1 = performance.now();
  const c1 = cpuTicks(p);
  process.kill(p, 'SIGUSR2');
  const bytes = await until(() => {
    try {
      return Number(readFileSync(out, 'utf8'));
    } catch {
      return undefined; // not written yet
    }
  }, 10_000, 'the child wrote its allocation figure');
  return { bytes, ticks: c1 - c0, ms: w1 - w0 };
}

const allocOutFile = (): string => join(tmpdir(), `hotpath-alloc-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);

/** One warm-up burst of 1000 calls, then `calls` measured ones, 64 in flight. */
export async function measureHotpath(o: { calls: number; call?: RoundtripCall; nodeArgs?: string[]; heapProfile?: string }): Promise<HotpathResult> {
  const c = o.call ?? ECHO_CALL;
  const allocOut = allocOutFile();
  const t = await openAgentRoundtrip({ synchronous: 'normal', log: 'info', nodeArgs: [...(o.nodeArgs ?? []), '--import', ALLOC_PRELOAD], env: { HP_ALLOC_OUT: allocOut, ...(o.heapProfile ? { HP_HEAP_PROF: o.heapProfile } : {}) } }, c);
  try {
    const m = await measureChild(() => t.call(), findAgentPid, allocOut, o.calls);
    const hz = 100;
    return { function: c.function, calls: o.calls, agent_cpu_us_per_call: Math.round(((m.ticks / hz) * 1e6) / o.calls * 10) / 10, bytes_per_call: Math.round(m.bytes / o.calls), calls_per_s: Math.round(o.calls / (m.ms / 1000)), response_bytes: t.frames.response };
  } finally {
    rmSync(allocOut, { force: true });
    await t.close();
  }
}

/** Heap bytes per call of the two baselines beside the agent's: the protocol floor 1.1 and the MCP SDK's server. */
export interface BaselineAllocs {
  /** bench/protocol-floor.ts (1.1), answering with `responseBytes` as the agent's `device.info` does. */
  floor_bytes_per_call: number;
  /** The MCP SDK's server over stdio (bench/mcp-server.ts), its `echo` tool. */
  mcp_server_bytes_per_call: number;
}

/**
 * What the baselines allocate per call, measured as the agent is (the same preload, 64 in flight, a warm-up
 * burst first): the floor does the protocol's duties and nothing else, so it is what any agent allocates.
 */
export async function measureBaselineAllocs(o: { calls: number; responseBytes: number }): Promise<BaselineAllocs> {
  const outs = [allocOutFile(), allocOutFile()];
  try {
    const floor = await openProtocolFloor({ response: o.responseBytes }, '1.1', { nodeArgs: ['--import', ALLOC_PRELOAD], env: { HP_ALLOC_OUT: outs[0]! } });
    let f;
    try {
      f = await measureChild(() => floor.call(), findAgentPid, outs[0]!, o.calls);
    } finally {
      await floor.close();
    }
    const mcp = await openMcpStdio({ nodeArgs: ['--import', ALLOC_PRELOAD], env: { HP_ALLOC_OUT: outs[1]! } });
    let m;
    try {
      m = await measureChild(() => mcp.call(), findAgentPid, outs[1]!, o.calls);
    } finally {
      await mcp.close();
    }
    return { floor_bytes_per_call: Math.round(f.bytes / o.calls), mcp_server_bytes_per_call: Math.round(m.bytes / o.calls) };
  } finally {
    for (const f of outs) rmSync(f, { force: true });
  }
}

/** The agent child: the newest child of this process. */
function findAgentPid(): number {
  const kids = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  return kids[kids.length - 1]!;
}

async function main(): Promise<void> {
  const sep = process.argv.indexOf('--');
  const own = sep >= 0 ? process.argv.slice(2, sep) : process.argv.slice(2);
  const nodeArgs = sep >= 0 ? process.argv.slice(sep + 1) : [];
  const fnAt = own.indexOf('--fn');
  const fn = fnAt >= 0 ? own.splice(fnAt, 2)[1] : ECHO_CALL.function;
  const profAt = own.indexOf('--heap-prof');
  const heapProfile = profAt >= 0 ? own.splice(profAt, 2)[1] : undefined;
  const call = HOTPATH_CALLS[fn ?? ''];
  if (!call) throw new Error(`--fn must be one of ${Object.keys(HOTPATH_CALLS).join(', ')}`);
  const calls = Number(own[0] ?? 6000);
  if (!Number.isInteger(calls) || calls < 1) throw new Error('calls must be a positive integer');
  const baselines = own.indexOf('--baselines');
  if (baselines >= 0) own.splice(baselines, 1);
  const r = await measureHotpath({ calls, call, nodeArgs, ...(heapProfile ? { heapProfile } : {}) });
  process.stdout.write(JSON.stringify(baselines >= 0 ? { ...r, ...(await measureBaselineAllocs({ calls, responseBytes: r.response_bytes })) } : r) + '\n');
}

if (isMain(import.meta.url)) runMain('bench:hotpath', main);
