/**
 * The spine's benchmarks in one run: a no-op call through the agent (journal on) against a raw `ws` echo
 * of the same frame sizes, the MCP TypeScript SDK over stdio and the protocol floor (the spec's frames
 * and journal lines with nothing else), plus the full runtime → bridge HTTP → agent path. Prints a table and the ratios the targets are stated in (docs/performance.md).
 *
 * Run: npm run bench [-- flags]  (builds, then runs dist/bench/run.js: every peer runs compiled code, as
 *        the product ships). Flags: [--warmup N] [--latency N] [--throughput N] [--concurrency N]
 *        [--rounds N] [--sync normal|full|both] [--log info|silent] [--no-full-path] [--profile DIR] [--json]
 * Each flag also reads BENCH_<NAME> from the environment (e.g. BENCH_LATENCY=500).
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { availableParallelism } from 'node:os';
import { openAgentRoundtrip } from './agent-roundtrip.js';
import { isMain, positiveInt, runMain } from './child.js';
import type { AgentSettings } from './device-stack.js';
import { openFullPath } from './full-path.js';
import { openMcpStdio } from './mcp-stdio.js';
import { measureTargets, type BenchCounts, type BenchResult, type BenchTarget } from './stats.js';
import { openWsEcho } from './ws-echo.js';
import { openProtocolFloor } from './protocol-floor.js';

/** Options of one benchmark run. */
export interface RunOptions {
  counts: BenchCounts;
  sync: ('normal' | 'full')[];
  log: AgentSettings['log'];
  fullPath: boolean;
  /** Directory for the agent and bridge processes' CPU profiles (`--cpu-prof`), if profiling. */
  profileDir?: string;
  /** Progress lines (to stderr). */
  progress?: (line: string) => void;
}

/** Everything one run measured. */
export interface RunReport {
  date: string;
  node: string;
  cpus: number;
  counts: BenchCounts;
  results: BenchResult[];
  ratios: { label: string; value: number; target?: string }[];
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
    say('starting ws echo server');
    const echo = await openWsEcho(frames);
    open.push(echo);
    say('starting MCP server');
    const mcp = await openMcpStdio();
    open.push(mcp);
    say('starting the protocol floor');
    const floor = await openProtocolFloor(frames);
    open.push(floor);
    let full: BenchTarget | undefined;
    if (o.fullPath) {
      say('starting bridge and agent for the full path');
      full = await openFullPath(settings(o.sync[0] ?? 'normal'), o.counts.concurrency);
      open.push(full);
    }
    const measured = await measureTargets(open, o.counts, say);
    const of = (t: BenchTarget) => measured[open.indexOf(t)]!;
    const m = of(mcp);
    const e = of(echo);
    const fl = of(floor);
    const ratios: RunReport['ratios'] = [];
    ratios.push({ label: 'protocol floor: throughput / MCP stdio', value: fl.throughput.callsPerS / m.throughput.callsPerS });
    ratios.push({ label: 'protocol floor: p50 / MCP stdio p50', value: fl.latency.p50Us / m.latency.p50Us });
    for (const t of agents) {
      const a = of(t);
      ratios.push({ label: `${a.name}: throughput / MCP stdio`, value: a.throughput.callsPerS / m.throughput.callsPerS, target: '≥ 1.0 (aim 1.5)' });
      ratios.push({ label: `${a.name}: p50 / MCP stdio p50`, value: a.latency.p50Us / m.latency.p50Us, target: '≤ 1.2' });
      ratios.push({ label: `${a.name}: throughput / ws echo`, value: a.throughput.callsPerS / e.throughput.callsPerS });
      ratios.push({ label: `${a.name}: p50 / ws echo p50`, value: a.latency.p50Us / e.latency.p50Us });
      ratios.push({ label: `${a.name}: throughput / protocol floor`, value: a.throughput.callsPerS / fl.throughput.callsPerS });
      ratios.push({ label: `${a.name}: p50 / protocol floor p50`, value: a.latency.p50Us / fl.latency.p50Us });
    }
    if (full && agents[0]) {
      const f = of(full);
      const a = of(agents[0]);
      ratios.push({ label: 'full path: throughput / agent round trip', value: f.throughput.callsPerS / a.throughput.callsPerS });
      ratios.push({ label: 'full path: p50 / agent round trip p50', value: f.latency.p50Us / a.latency.p50Us });
    }
    return { date: new Date().toISOString(), node: process.version, cpus: availableParallelism(), counts: o.counts, results: measured, ratios };
  } finally {
    for (const t of open.reverse()) await t.close().catch(() => undefined);
  }
}

/** The report as a plain-text table plus ratios. */
export function formatReport(r: RunReport): string {
  const c = r.counts;
  const rows = r.results.map((x) => [x.name, x.latency.p50Us.toFixed(0), x.latency.p99Us.toFixed(0), x.latency.meanUs.toFixed(0), x.throughput.callsPerS.toFixed(0)]);
  const head = ['benchmark', 'p50 µs', 'p99 µs', 'mean µs', `calls/s (${c.concurrency} in flight)`];
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
  ];
  return out.join('\n');
}

function envInt(name: string, fallback: number): string {
  return process.env[`BENCH_${name}`] ?? String(fallback);
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
      profile: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const sync = values.sync === 'both' ? (['normal', 'full'] as const) : values.sync === 'full' ? (['full'] as const) : values.sync === 'normal' ? (['normal'] as const) : undefined;
  if (!sync) throw new Error('--sync must be normal, full or both');
  if (values.log !== 'info' && values.log !== 'silent') throw new Error('--log must be info or silent');
  const profileDir = values.profile ? resolve(values.profile) : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const report = await runBenchmarks({
    counts: { warmup: positiveInt(values.warmup, 'warmup'), latencyN: positiveInt(values.latency, 'latency'), throughputN: positiveInt(values.throughput, 'throughput'), concurrency: positiveInt(values.concurrency, 'concurrency'), rounds: positiveInt(values.rounds, 'rounds') },
    sync: [...sync],
    log: values.log,
    fullPath: !values['no-full-path'],
    ...(profileDir ? { profileDir } : {}),
    progress: (l) => process.stderr.write(l + '\n'),
  });
  process.stdout.write((values.json ? JSON.stringify(report, null, 2) : formatReport(report)) + '\n');
  if (profileDir) process.stderr.write(`agent and bridge CPU profiles in ${profileDir}\n`);
}

if (isMain(import.meta.url)) runMain('bench', main);
