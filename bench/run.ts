/**
 * The benchmarks in one run: a no-op call through the agent (journal on) against a raw `ws` echo of the
 * same frame sizes, the MCP TypeScript SDK over stdio and the protocol floor (the spec's frames and
 * journal lines with nothing else; 1.1's and, for the record, 1.0's), plus the full runtime → bridge
 * HTTP → agent path beside its floor (bench/bridge-floor.ts: the same HTTP client and agent through a
 * bridge with nothing but its duties, without and with its two SQLite commits, and a bare HTTP echo), a sustained round of the agent and MCP, and the headless agent's idle memory.
 * Prints a table, the ratios, and issue 21's targets table with a verdict per figure
 * (bench/targets.ts; docs/performance.md).
 *
 * Run: npm run bench [-- flags]  (builds, then runs dist/bench/run.js: every peer runs compiled code, as
 *        the product ships). Flags: [--warmup N] [--latency N] [--throughput N] [--concurrency N]
 *        [--rounds N] [--sync normal|full|both] [--log info|silent] [--no-full-path] [--sustained N|0]
 *        [--no-idle-rss] [--profile DIR] [--json]
 *        [--variants FILE] (more agents in the same rounds, each against the first: a JSON list of
 *        { "label", "child"?: another build's dist/bench/agent-child.js, "env"?: {…}, "log"?: "info"|"silent" })
 *        [--cluster] (also issue 34's clustered bridge, bench/cluster.ts at its defaults: needs root and PostgreSQL)
 * Each flag also reads BENCH_<NAME> from the environment (e.g. BENCH_LATENCY=500).
 */
import { runScale } from './bridge-scale.js';
import { runStall } from './journal-stall.js';
import { mkdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { availableParallelism } from 'node:os';
import { openAgentRoundtrip } from './agent-roundtrip.js';
import { isMain, positiveInt, runMain } from './child.js';
import type { AgentSettings } from './device-stack.js';
import { openFullPath } from './full-path.js';
import { openMcpStdio } from './mcp-stdio.js';
import { measureTargets, measureThroughput, median, SETTLE_MS, type BenchCounts, type BenchResult, type BenchTarget } from './stats.js';
import { openWsEcho } from './ws-echo.js';
import { openProtocolFloor } from './protocol-floor.js';
import { openBridgeFloor, type BridgeFloorVariant } from './bridge-floor.js';
import { measureIdleRss } from './idle-rss.js';
import { CLUSTER_FIGURES, FIGURES, formatVerdicts, verdicts, type Figure, type Measured, type Verdict } from './targets.js';
import { clusterMeasured, formatCluster, PARTS, runCluster, type ClusterReport } from './cluster.js';
import { DEVICE_INFO_CALL } from './agent-roundtrip.js';
import { measureBaselineAllocs, measureHotpath, type BaselineAllocs } from './hotpath.js';
import { formatFirstCalls, measureFirstCalls, type FirstCall } from './first-call.js';
import { formatModuleMemory, measureModuleMemory, type ModuleMemoryRow } from './module-memory.js';

/** Options of one benchmark run. */
export interface RunOptions {
  counts: BenchCounts;
  sync: ('normal' | 'full')[];
  log: AgentSettings['log'];
  fullPath: boolean;
  /** Calls per sustained round of the agent and MCP (one round each per `rounds`, interleaved); 0 skips it. */
  sustained: number;
  /** Measure the headless agent's idle RSS (bench/idle-rss.ts, after the other targets are closed). */
  idleRss: boolean;
  /** Seconds after start the idle RSS is read (30, as the issue measures it). */
  idleRssAfterS?: number;
  /**
   * Figures measured elsewhere in this run (e.g. the bridge at scale, the agent's longest stall):
   * merged into the targets table. Where to plug a figure from another benchmark in.
   */
  extraFigures?: () => Promise<Partial<Measured>>;
  /** Directory for the agent and bridge processes' CPU profiles (`--cpu-prof`), if profiling. */
  profileDir?: string;
  /**
   * More agents measured beside the first, in the same interleaved rounds (e.g. another build's
   * `dist/bench/agent-child.js`, or the same one with other environment or log settings): each gets its
   * ratios against the first agent. Not part of the targets table.
   */
  variants?: AgentVariant[];
  /** The targets table's rows (default FIGURES). */
  figures?: Figure[];
  /** Progress lines (to stderr). */
  progress?: (line: string) => void;
}

/** An agent beside the first one (`--variants FILE`, a JSON list of these). */
export interface AgentVariant {
  label: string;
  /** Its agent child's script (another build's dist/bench/agent-child.js); default this build's. */
  child?: string;
  env?: Record<string, string>;
  log?: AgentSettings['log'];
}

/** Everything one run measured. */
export interface RunReport {
  date: string;
  node: string;
  cpus: number;
  counts: BenchCounts;
  results: BenchResult[];
  ratios: { label: string; value: number; target?: string }[];
  /** The sustained rounds' medians, calls/s (when measured). */
  sustained?: { calls: number; agent: number; mcp: number };
  /** The idle RSS figures (when measured), `afterS` seconds after start. */
  idleRss?: { config: string; rssMb: number }[];
  idleRssAfterS?: number;
  /** Issue 21's targets: figure, value, target, verdict. */
  targets: Verdict[];
}

/** `--variants FILE`: a JSON list of `{ label, child?, env?, log? }`, checked. */
function readVariants(file: string): AgentVariant[] {
  const list = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  const ok = (v: unknown): v is AgentVariant => {
    const x = v as Partial<AgentVariant> | null;
    return !!x && typeof x.label === 'string' && (x.child === undefined || typeof x.child === 'string') && (x.log === undefined || x.log === 'info' || x.log === 'silent') && (x.env === undefined || (typeof x.env === 'object' && Object.values(x.env).every((e) => typeof e === 'string')));
  };
  if (!Array.isArray(list) || !list.every(ok)) throw new Error(`${file}: expected a JSON list of { "label": string, "child"?: path, "env"?: { NAME: string }, "log"?: "info" | "silent" }`);
  return list;
}

/** Opens every target, measures them side by side in interleaved rounds, closes them. */
export async function runBenchmarks(o: RunOptions): Promise<RunReport> {
  const say = o.progress ?? (() => undefined);
  const settings = (sync: 'normal' | 'full'): AgentSettings => ({
    synchronous: sync,
    log: o.log,
    ...(o.profileDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${o.profileDir}`] } : {}),
  });
  const open: BenchTarget[] = [];
  try {
    const agents: BenchTarget[] = [];
    let frames = { request: 300, response: 480 };
    for (const sync of o.sync) {
      say(`starting agent, journal ${sync.toUpperCase()}`);
      const a = await openAgentRoundtrip(settings(sync));
      // The first agent's sizes (its sample outcome's duration_ms may differ from another's by a digit).
      if (!agents.length) frames = a.frames;
      agents.push(a);
      open.push(a);
    }
    const variants: BenchTarget[] = [];
    for (const v of o.variants ?? []) {
      say(`starting agent variant ${v.label}`);
      const base = settings(o.sync[0] ?? 'normal');
      const a = await openAgentRoundtrip({ ...base, ...(v.log ? { log: v.log } : {}), ...(v.child ? { child: resolve(v.child) } : {}), ...(v.env ? { env: v.env } : {}) });
      variants.push({ ...a, name: `agent: ${v.label}` });
      open.push(variants.at(-1)!);
    }
    say('starting ws echo server');
    const echo = await openWsEcho(frames);
    open.push(echo);
    say('starting MCP server');
    const mcp = await openMcpStdio();
    open.push(mcp);
    say('starting the protocol floors (1.1, 1.0, and 1.1 with the per-call checks)');
    const floor = await openProtocolFloor(frames, '1.1');
    open.push(floor);
    const floor10 = await openProtocolFloor(frames, '1.0');
    open.push(floor10);
    const floorChecks = await openProtocolFloor(frames, 'checks');
    open.push(floorChecks);
    let full: BenchTarget | undefined;
    let full32: BenchTarget | undefined;
    let fullFloors: { none: BenchTarget; sqlite: BenchTarget; echo: BenchTarget } | undefined;
    if (o.fullPath) {
      say('starting bridge and agent for the full path');
      full = await openFullPath(settings(o.sync[0] ?? 'normal'), o.counts.concurrency);
      open.push(full);
      // What a runtime sees with 32 keep-alive connections (issue 21's target), same bridge and agent.
      const f = full;
      full32 = { name: `${f.name}, 32 in flight`, call: () => f.call(), close: () => Promise.resolve(), concurrency: 32, throughputOnly: true };
      open.push(full32);
      say('starting the full path\'s floors (no storage, two SQLite commits) and a bare HTTP echo');
      const floorOf = async (variant: BridgeFloorVariant) => {
        const t = await openBridgeFloor(settings(o.sync[0] ?? 'normal'), o.counts.concurrency, variant, frames.response);
        open.push(t);
        return t;
      };
      fullFloors = { none: await floorOf('none'), sqlite: await floorOf('sqlite'), echo: await floorOf('echo') };
    }
    const measured = await measureTargets(open, o.counts, say);
    const of = (t: BenchTarget) => measured[open.indexOf(t)]!;
    const m = of(mcp);
    const e = of(echo);
    const fl = of(floor);
    const fl10 = of(floor10);
    const flc = of(floorChecks);
    const ratios: RunReport['ratios'] = [];
    ratios.push({ label: 'protocol floor 1.1: throughput / MCP stdio', value: fl.throughput.callsPerS / m.throughput.callsPerS });
    ratios.push({ label: 'protocol floor 1.1: p50 / MCP stdio p50', value: fl.latency.p50Us / m.latency.p50Us });
    ratios.push({ label: 'protocol floor 1.0 (four frames): throughput / MCP stdio', value: fl10.throughput.callsPerS / m.throughput.callsPerS });
    ratios.push({ label: 'protocol floor 1.0 (four frames): p50 / MCP stdio p50', value: fl10.latency.p50Us / m.latency.p50Us });
    ratios.push({ label: 'protocol floor 1.1 + checks: throughput / protocol floor 1.1', value: flc.throughput.callsPerS / fl.throughput.callsPerS });
    ratios.push({ label: 'protocol floor 1.1 + checks: throughput / MCP stdio', value: flc.throughput.callsPerS / m.throughput.callsPerS });
    ratios.push({ label: 'protocol floor 1.1 + checks: p50 / MCP stdio p50', value: flc.latency.p50Us / m.latency.p50Us });
    for (const t of agents) {
      const a = of(t);
      ratios.push({ label: `${a.name}: throughput / MCP stdio`, value: a.throughput.callsPerS / m.throughput.callsPerS });
      ratios.push({ label: `${a.name}: p50 / MCP stdio p50`, value: a.latency.p50Us / m.latency.p50Us });
      ratios.push({ label: `${a.name}: throughput / ws echo`, value: a.throughput.callsPerS / e.throughput.callsPerS });
      ratios.push({ label: `${a.name}: p50 / ws echo p50`, value: a.latency.p50Us / e.latency.p50Us });
      ratios.push({ label: `${a.name}: throughput / protocol floor 1.1`, value: a.throughput.callsPerS / fl.throughput.callsPerS });
      ratios.push({ label: `${a.name}: p50 / protocol floor 1.1 p50`, value: a.latency.p50Us / fl.latency.p50Us });
      ratios.push({ label: `${a.name}: throughput / protocol floor 1.0`, value: a.throughput.callsPerS / fl10.throughput.callsPerS });
      ratios.push({ label: `${a.name}: throughput / protocol floor 1.1 + checks`, value: a.throughput.callsPerS / flc.throughput.callsPerS });
      ratios.push({ label: `${a.name}: p50 / protocol floor 1.1 + checks p50`, value: a.latency.p50Us / flc.latency.p50Us });
    }
    const a0 = agents[0] ? of(agents[0]) : undefined;
    for (const x of a0 ? variants.map(of) : []) {
      ratios.push({ label: `${x.name}: throughput / ${a0!.name}`, value: x.throughput.callsPerS / a0!.throughput.callsPerS });
      ratios.push({ label: `${x.name}: p50 / ${a0!.name} p50`, value: x.latency.p50Us / a0!.latency.p50Us });
      ratios.push({ label: `${x.name}: throughput / protocol floor 1.1 + checks`, value: x.throughput.callsPerS / flc.throughput.callsPerS });
    }
    const fig: Measured = {
      mcpCallsPerS: m.throughput.callsPerS,
      mcpP50Us: m.latency.p50Us,
      floor11CallsPerS: fl.throughput.callsPerS,
      ...(o.sync[0] === 'normal' && a0 ? { agentCallsPerS: a0.throughput.callsPerS, agentP50Us: a0.latency.p50Us } : {}),
    };
    if (full && full32) {
      const f = of(full);
      fig.fullCallsPerS = f.throughput.callsPerS;
      fig.fullP50Us = f.latency.p50Us;
      fig.full32CallsPerS = of(full32).throughput.callsPerS;
      if (a0) {
        ratios.push({ label: 'full path: throughput / agent round trip', value: f.throughput.callsPerS / a0.throughput.callsPerS });
        ratios.push({ label: 'full path: p50 / agent round trip p50', value: f.latency.p50Us / a0.latency.p50Us });
      }
      if (fullFloors) {
        for (const [kind, t] of [['no storage', fullFloors.none], ['2 SQLite commits', fullFloors.sqlite]] as const) {
          const x = of(t);
          ratios.push({ label: `full path floor (${kind}): throughput / MCP stdio`, value: x.throughput.callsPerS / m.throughput.callsPerS });
          ratios.push({ label: `full path floor (${kind}): p50 / MCP stdio p50`, value: x.latency.p50Us / m.latency.p50Us });
          ratios.push({ label: `full path: throughput / full path floor (${kind})`, value: f.throughput.callsPerS / x.throughput.callsPerS });
          ratios.push({ label: `full path: p50 / full path floor (${kind}) p50`, value: f.latency.p50Us / x.latency.p50Us });
        }
        ratios.push({ label: 'HTTP echo: p50 / MCP stdio p50', value: of(fullFloors.echo).latency.p50Us / m.latency.p50Us });
      }
    }
    let sustained: RunReport['sustained'];
    if (o.sustained > 0 && agents[0] && o.sync[0] === 'normal') {
      sustained = await measureSustained(agents[0], mcp, o.sustained, o.counts, say);
      fig.agentSustainedCallsPerS = sustained.agent;
      fig.mcpSustainedCallsPerS = sustained.mcp;
    }
    // The memory figures need a quiet machine: every other target is closed first.
    for (const t of open.reverse()) await t.close().catch(() => undefined);
    open.length = 0;
    let idleRss: RunReport['idleRss'];
    if (o.idleRss) {
      const afterS = o.idleRssAfterS ?? 30;
      say(`headless agents for the idle RSS (${afterS} s)`);
      idleRss = await measureIdleRss({ afterS, say });
      fig.idleRssMinimalMb = idleRss.find((x) => x.config === 'minimal')?.rssMb;
      fig.idleRssDemoMb = idleRss.find((x) => x.config === 'demo')?.rssMb;
    }
    Object.assign(fig, (await o.extraFigures?.()) ?? {});
    return {
      date: new Date().toISOString(),
      node: process.version,
      cpus: availableParallelism(),
      counts: o.counts,
      results: measured,
      ratios,
      ...(sustained ? { sustained } : {}),
      ...(idleRss ? { idleRss, idleRssAfterS: o.idleRssAfterS ?? 30 } : {}),
      targets: verdicts(fig, o.figures),
    };
  } finally {
    for (const t of open.reverse()) await t.close().catch(() => undefined);
  }
}

/**
 * Throughput under sustained load: `rounds` times one round of `calls` calls of the agent, then of MCP
 * (so the agent's journal table catches up inside the measurement, as it must under real load);
 * medians over the rounds.
 */
async function measureSustained(agent: BenchTarget, mcp: BenchTarget, calls: number, c: BenchCounts, say: (l: string) => void): Promise<NonNullable<RunReport['sustained']>> {
  const a: number[] = [];
  const m: number[] = [];
  const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));
  for (let r = 0; r < c.rounds; r++) {
    say(`sustained round ${r + 1}/${c.rounds} (${calls} calls each)`);
    a.push((await measureThroughput(() => agent.call(), calls, c.concurrency)).callsPerS);
    await settle();
    m.push((await measureThroughput(() => mcp.call(), calls, c.concurrency)).callsPerS);
    await settle();
  }
  return { calls, agent: median(a), mcp: median(m) };
}

/** The report as a plain-text table plus ratios. */
export function formatReport(r: RunReport): string {
  const c = r.counts;
  const us = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : '–');
  const rows = r.results.map((x) => [x.name, us(x.latency.p50Us), us(x.latency.p99Us), us(x.latency.meanUs), x.throughput.callsPerS.toFixed(0)]);
  const head = ['benchmark', 'p50 µs', 'p99 µs', 'mean µs', `calls/s (${c.concurrency} in flight unless named)`];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const out = [
    `${r.date}  Node ${r.node}  ${r.cpus} CPUs  warm-up ${c.warmup}; ${c.rounds} interleaved rounds of ${c.latencyN} sequential calls and ${c.throughputN} calls ${c.concurrency} in flight; medians over rounds`,
    '',
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    'ratios',
    ...r.ratios.map((x) => `  ${x.label.padEnd(70)} ${x.value.toFixed(2)}×${x.target ? `   (target ${x.target})` : ''}`),
    ...(r.sustained ? ['', `sustained: ${c.rounds} interleaved rounds of ${r.sustained.calls} calls, ${c.concurrency} in flight: agent ${r.sustained.agent.toFixed(0)} calls/s, MCP stdio ${r.sustained.mcp.toFixed(0)} calls/s (medians)`] : []),
    ...(r.idleRss ? ['', `idle RSS ${r.idleRssAfterS ?? 30} s after start: ${r.idleRss.map((x) => `${x.config} config ${x.rssMb.toFixed(1)} MB`).join(', ')}`] : []),
    '',
    formatVerdicts(r.targets),
  ];
  return out.join('\n');
}

function envInt(name: string, fallback: number): string {
  return process.env[`BENCH_${name}`] ?? String(fallback);
}

/** What the other benchmarks of this run measure (each can be left out). */
interface OtherBenchmarks {
  /** Devices for the bridge at scale; 0 leaves it out. */
  devices: number;
  stall: boolean;
  /** Each handler's first call against its warm calls (bench/first-call.ts). */
  firstCalls: boolean;
  /** Bytes allocated per device.info call (bench/hotpath.ts); 0 calls leaves it out. */
  allocCalls: number;
  /** Memory at rest by module (bench/module-memory.ts). */
  moduleMemory: boolean;
  /** The clustered bridge (bench/cluster.ts), opt-in: it needs PostgreSQL. */
  cluster: boolean;
}

/** The heap allocated per call by the agent and by the two baselines, measured alike (bench/hotpath.ts). */
function formatAllocations(a: { agent: number } & BaselineAllocs): string {
  const kb = (b: number): string => `${(b / 1024).toFixed(1)} KB`;
  return [
    'heap allocated per call, 64 in flight (bench/hotpath.ts: a GC profiler in each process)',
    `  agent, device.info                                    ${kb(a.agent)}`,
    `  protocol floor 1.1, device.info's response size       ${kb(a.floor_bytes_per_call)}  (the protocol's duties and nothing else)`,
    `  MCP SDK server over stdio, echo                       ${kb(a.mcp_server_bytes_per_call)}`,
  ].join('\n');
}

/** Tables the other benchmarks print after the report (the per-module memory, the first calls). */
interface OtherTables {
  firstCalls?: FirstCall[];
  moduleMemory?: ModuleMemoryRow[];
  cluster?: ClusterReport;
  allocations?: { agent: number } & BaselineAllocs;
}

/**
 * The figures of the other benchmarks, run after this one's targets are closed: the bridge at scale, the
 * agent's stall, the allocations per device.info call, each handler's first call, and (a table, no target)
 * the memory at rest by module.
 */
async function otherFigures(o: OtherBenchmarks, tables: OtherTables, say: (l: string) => void): Promise<Partial<Measured>> {
  const fig: Partial<Measured> = {};
  if (o.stall) {
    say('the agent\'s longest stall: 30000 calls on a prefilled journal (bench/journal-stall.ts)');
    const r = await runStall({ calls: 30_000, prefill: 32_768, concurrency: 64, warmup: 3000, rounds: 1, sync: 'normal', nice: -15 }, say);
    fig.agentStallMs = r.maxDelayMs;
  }
  if (o.devices > 0) {
    say(`the bridge at scale: ${o.devices} devices, restart storm (bench/bridge-scale.ts)`);
    const r = await runScale({ devices: o.devices, workers: 2, calls: 100, concurrency: 256, restart: true, reconnectLimitMs: 120_000, progress: say });
    fig.bridgeBytesPerDevice = r.rss_per_device_bytes;
    if (r.restart) {
      if (r.restart.reconnect_all_ms !== null) fig.bridgeReconnectS = r.restart.reconnect_all_ms / 1000;
      fig.bridgeStormCallsOk = r.restart.calls_completed === r.restart.calls;
    }
  }
  if (o.allocCalls > 0) {
    say(`heap allocated per device.info call: ${o.allocCalls} calls, 64 in flight (bench/hotpath.ts)`);
    const agent = await measureHotpath({ calls: o.allocCalls, call: DEVICE_INFO_CALL });
    fig.deviceInfoBytesPerCall = agent.bytes_per_call;
    say('the same for the protocol floor 1.1 (device.info\'s response size) and the MCP SDK\'s server');
    tables.allocations = { agent: agent.bytes_per_call, ...(await measureBaselineAllocs({ calls: o.allocCalls, responseBytes: agent.response_bytes })) };
  }
  if (o.firstCalls) {
    tables.firstCalls = await measureFirstCalls({ say });
    fig.firstCallExtraMs = Object.fromEntries(tables.firstCalls.map((r) => [r.fn, r.extraMs]));
  }
  if (o.moduleMemory) {
    say('memory at rest by module (bench/module-memory.ts)');
    tables.moduleMemory = await measureModuleMemory();
  }
  if (o.cluster) {
    say('the clustered bridge (bench/cluster.ts), on a private PostgreSQL');
    tables.cluster = await runCluster({
      parts: [...PARTS],
      counts: { warmup: 500, latencyN: 1000, throughputN: 3000, concurrency: 32, rounds: 3 },
      lossDevices: 2000,
      restartDevices: 10_000,
      workers: 2,
      connectConcurrency: 256,
      pgFsync: true,
      pgSyncCommit: true,
      progress: say,
    });
    Object.assign(fig, clusterMeasured(tables.cluster));
  }
  return fig;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      warmup: { type: 'string', default: envInt('WARMUP', 2000) },
      latency: { type: 'string', default: envInt('LATENCY', 1000) },
      throughput: { type: 'string', default: envInt('THROUGHPUT', 3000) },
      concurrency: { type: 'string', default: envInt('CONCURRENCY', 64) },
      rounds: { type: 'string', default: envInt('ROUNDS', 3) },
      sync: { type: 'string', default: process.env['BENCH_SYNC'] ?? 'both' },
      log: { type: 'string', default: process.env['BENCH_LOG'] ?? 'info' },
      'no-full-path': { type: 'boolean', default: process.env['BENCH_NO_FULL_PATH'] === '1' },
      sustained: { type: 'string', default: envInt('SUSTAINED', 30_000) },
      'no-idle-rss': { type: 'boolean', default: process.env['BENCH_NO_IDLE_RSS'] === '1' },
      // The bridge at scale (bench/bridge-scale.ts) and the agent's longest stall (bench/journal-stall.ts), in the same run.
      scale: { type: 'string', default: envInt('SCALE', 10_000) },
      'no-stall': { type: 'boolean', default: process.env['BENCH_NO_STALL'] === '1' },
      // Issue 32's rows: allocations per device.info call, each handler's first call, memory at rest by module.
      alloc: { type: 'string', default: envInt('ALLOC', 6000) },
      'no-first-call': { type: 'boolean', default: process.env['BENCH_NO_FIRST_CALL'] === '1' },
      'no-module-memory': { type: 'boolean', default: process.env['BENCH_NO_MODULE_MEMORY'] === '1' },
      // Issue 34's rows: the clustered bridge on a private PostgreSQL (opt-in; `npm run bench:cluster` alone takes flags).
      cluster: { type: 'boolean', default: process.env['BENCH_CLUSTER'] === '1' },
      profile: { type: 'string' },
      variants: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const sync = values.sync === 'both' ? (['normal', 'full'] as const) : values.sync === 'full' ? (['full'] as const) : values.sync === 'normal' ? (['normal'] as const) : undefined;
  if (!sync) throw new Error('--sync must be normal, full or both');
  if (values.log !== 'info' && values.log !== 'silent') throw new Error('--log must be info or silent');
  const profileDir = values.profile ? resolve(values.profile) : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const tables: OtherTables = {};
  const report = await runBenchmarks({
    counts: { warmup: positiveInt(values.warmup, 'warmup'), latencyN: positiveInt(values.latency, 'latency'), throughputN: positiveInt(values.throughput, 'throughput'), concurrency: positiveInt(values.concurrency, 'concurrency'), rounds: positiveInt(values.rounds, 'rounds') },
    sync: [...sync],
    log: values.log,
    fullPath: !values['no-full-path'],
    sustained: values.sustained === '0' ? 0 : positiveInt(values.sustained, 'sustained'),
    idleRss: !values['no-idle-rss'],
    ...(profileDir ? { profileDir } : {}),
    ...(values.variants ? { variants: readVariants(values.variants) } : {}),
    ...(values.cluster ? { figures: [...FIGURES, ...CLUSTER_FIGURES] } : {}),
    progress: (l) => process.stderr.write(l + '\n'),
    extraFigures: () =>
      otherFigures(
        {
          devices: values.scale === '0' ? 0 : positiveInt(values.scale, 'scale'),
          stall: !values['no-stall'],
          allocCalls: values.alloc === '0' ? 0 : positiveInt(values.alloc, 'alloc'),
          firstCalls: !values['no-first-call'],
          moduleMemory: !values['no-module-memory'],
          cluster: values.cluster,
        },
        tables,
        (l) => process.stderr.write(l + '\n'),
      ),
  });
  const text = [
    formatReport(report),
    ...(tables.allocations ? [formatAllocations(tables.allocations)] : []),
    ...(tables.firstCalls ? [formatFirstCalls(tables.firstCalls)] : []),
    ...(tables.moduleMemory ? [formatModuleMemory(tables.moduleMemory)] : []),
    ...(tables.cluster ? [formatCluster(tables.cluster)] : []),
  ].join('\n\n');
  process.stdout.write((values.json ? JSON.stringify({ ...report, ...tables }, null, 2) : text) + '\n');
  if (profileDir) process.stderr.write(`agent and bridge CPU profiles in ${profileDir}\n`);
}

if (isMain(import.meta.url)) runMain('bench', main);
