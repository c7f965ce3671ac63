/**
 * Issue 21's targets table: every figure with its target and a verdict, printed by `npm run bench`.
 * Each figure comes from one small named function of the run's measurements (`FIGURES`), so a figure
 * measured by another benchmark (the bridge at scale, the event-loop stall) is plugged in by giving its
 * function a source; a figure the run did not measure says so, never a made-up number.
 */

/** What one run measured, as the figures read it (undefined: not measured in this run). */
export interface Measured {
  /** Agent (journal NORMAL) and MCP stdio, bursts of `throughputN` calls, `concurrency` in flight. */
  agentCallsPerS?: number;
  mcpCallsPerS?: number;
  /** One long round per measurement (`--sustained` calls). */
  agentSustainedCallsPerS?: number;
  mcpSustainedCallsPerS?: number;
  agentP50Us?: number;
  mcpP50Us?: number;
  /** The protocol floor with 1.1's duties (two frames, two durable log writes per call). */
  floor11CallsPerS?: number;
  /** Full path (HTTP → bridge → agent): throughput with the run's concurrency, with 32 in flight, and p50. */
  fullCallsPerS?: number;
  full32CallsPerS?: number;
  fullP50Us?: number;
  /** Bridge at scale (bench/bridge-scale.ts): RSS above the idle bridge's per connected device, bytes. */
  bridgeBytesPerDevice?: number;
  /** Bridge at scale: seconds until every device reconnected after a restart; whether the storm's calls completed. */
  bridgeReconnectS?: number;
  bridgeStormCallsOk?: boolean;
  /** Headless agent's idle RSS 30 s after start, MB (bench/idle-rss.ts). */
  idleRssMinimalMb?: number;
  idleRssDemoMb?: number;
  /** Longest event-loop delay in the agent during a sustained run, ms. */
  agentStallMs?: number;
  /** Bytes the agent's heap allocated per `device.info` call, 64 in flight (bench/hotpath.ts). */
  deviceInfoBytesPerCall?: number;
  /** Per function of {@link FIRST_CALL_FUNCTIONS}: its first call on a fresh agent minus its warm calls' median, ms (bench/first-call.ts). */
  firstCallExtraMs?: Partial<Record<FirstCallFunction, number>>;
  /**
   * The clustered bridge (bench/cluster.ts, issue 34): the full path through the single process (SQLite), through
   * a cluster of one node and of three (the call submitted on a node other than the device's owner), in one run.
   */
  singleP50Us?: number;
  singleCallsPerS?: number;
  cluster1P50Us?: number;
  cluster1CallsPerS?: number;
  cluster3P50Us?: number;
  cluster3CallsPerS?: number;
  /** Seconds from the SIGKILL of one of three nodes until every device it held had a session on a survivor. */
  clusterNodeLossS?: number;
  /** The largest of the nodes' RSS above idle per device each holds, bytes. */
  clusterBytesPerDevicePerNode?: number;
}

/** One function per built-in handler whose first call is measured (bench/first-call.ts calls them). */
export const FIRST_CALL_FUNCTIONS = ['device.info', 'diagnostics.echo', 'files.list_dir', 'serial.list_ports', 'bluetooth.state', 'printer.list', 'camera.list'] as const;
export type FirstCallFunction = (typeof FIRST_CALL_FUNCTIONS)[number];

/** One row of the table. */
export interface Figure {
  label: string;
  /** The target as the issue states it. */
  target: string;
  /** The figure's value from this run, or undefined when it was not measured. */
  value(m: Measured): number | undefined;
  /** Whether `value` meets the target (extra conditions may read `m`). */
  met(value: number, m: Measured): boolean;
  /** How the value is printed. */
  format(value: number): string;
}

const ratio = (a: number | undefined, b: number | undefined): number | undefined => (a !== undefined && b !== undefined && b > 0 ? a / b : undefined);
const times = (v: number) => `${v.toFixed(2)}×`;

/** Issue 21's targets, in its order, then issue 32's new rows. */
export const FIGURES: Figure[] = [
  { label: 'agent throughput / MCP stdio (bursts, 64 in flight)', target: '≥ 1.0× (aim 1.3×)', value: (m) => ratio(m.agentCallsPerS, m.mcpCallsPerS), met: (v) => v >= 1.0, format: times },
  { label: 'agent throughput / MCP stdio, sustained', target: '≥ 0.8×', value: (m) => ratio(m.agentSustainedCallsPerS, m.mcpSustainedCallsPerS), met: (v) => v >= 0.8, format: times },
  { label: 'agent p50 / MCP stdio p50 (1 in flight)', target: '≤ 1.5×', value: (m) => ratio(m.agentP50Us, m.mcpP50Us), met: (v) => v <= 1.5, format: times },
  { label: 'agent throughput / protocol floor 1.1', target: '≥ 0.65×', value: (m) => ratio(m.agentCallsPerS, m.floor11CallsPerS), met: (v) => v >= 0.65, format: times },
  { label: 'full path throughput / agent round trip', target: '≥ 0.5×', value: (m) => ratio(m.fullCallsPerS, m.agentCallsPerS), met: (v) => v >= 0.5, format: times },
  { label: 'full path p50 / agent round-trip p50', target: '≤ 2.0×', value: (m) => ratio(m.fullP50Us, m.agentP50Us), met: (v) => v <= 2.0, format: times },
  { label: 'full path throughput (32 in flight) / MCP stdio', target: '≥ 0.5×', value: (m) => ratio(m.full32CallsPerS, m.mcpCallsPerS), met: (v) => v >= 0.5, format: times },
  { label: 'full path p50 / MCP stdio p50', target: '≤ 3.0×', value: (m) => ratio(m.fullP50Us, m.mcpP50Us), met: (v) => v <= 3.0, format: times },
  {
    label: 'bridge: 10 000 idle devices, RSS above idle per device',
    target: '≤ 20 kB',
    value: (m) => m.bridgeBytesPerDevice,
    met: (v) => v <= 20_000,
    format: (v) => `${(v / 1000).toFixed(1)} kB`,
  },
  {
    label: 'bridge: all 10 000 reconnected after a restart',
    target: '≤ 30 s, storm calls complete',
    value: (m) => m.bridgeReconnectS,
    met: (v, m) => v <= 30 && m.bridgeStormCallsOk === true,
    format: (v) => `${v.toFixed(1)} s`,
  },
  { label: 'headless agent idle RSS 30 s after start, minimal config', target: '≤ 70 MB', value: (m) => m.idleRssMinimalMb, met: (v) => v <= 70, format: (v) => `${v.toFixed(1)} MB` },
  { label: "headless agent idle RSS 30 s after start, the demo's config", target: '≤ 70 MB', value: (m) => m.idleRssDemoMb, met: (v) => v <= 70, format: (v) => `${v.toFixed(1)} MB` },
  { label: 'stall: longest event-loop delay in the agent, sustained run', target: '≤ 20 ms', value: (m) => m.agentStallMs, met: (v) => v <= 20, format: (v) => `${v.toFixed(1)} ms` },
  // Issue 32's new rows.
  { label: 'agent heap allocated per device.info call (64 in flight)', target: '≤ 8 KB', value: (m) => m.deviceInfoBytesPerCall, met: (v) => v <= 8 * 1024, format: (v) => `${(v / 1024).toFixed(1)} KB` },
  ...FIRST_CALL_FUNCTIONS.map(
    (fn): Figure => ({
      label: `first call − warm call on a fresh agent: ${fn}`,
      target: '≤ 50 ms',
      value: (m) => m.firstCallExtraMs?.[fn],
      met: (v) => v <= 50,
      format: (v) => `${v.toFixed(1)} ms`,
    }),
  ),
];

/** Issue 34's rows (bench/cluster.ts; `npm run bench:cluster`, or `npm run bench -- --cluster`: they need PostgreSQL). */
export const CLUSTER_FIGURES: Figure[] = [
  { label: 'cluster, 1 node: full path p50 / single process p50', target: '≤ 1.5×', value: (m) => ratio(m.cluster1P50Us, m.singleP50Us), met: (v) => v <= 1.5, format: times },
  { label: 'cluster, 1 node: throughput / single process', target: '≥ 0.7×', value: (m) => ratio(m.cluster1CallsPerS, m.singleCallsPerS), met: (v) => v >= 0.7, format: times },
  { label: 'cluster, 3 nodes, call on another node: p50 / single process p50', target: '≤ 1.5×', value: (m) => ratio(m.cluster3P50Us, m.singleP50Us), met: (v) => v <= 1.5, format: times },
  { label: 'cluster, 3 nodes, call on another node: throughput / single process', target: '≥ 0.7×', value: (m) => ratio(m.cluster3CallsPerS, m.singleCallsPerS), met: (v) => v >= 0.7, format: times },
  { label: 'cluster: one of three nodes SIGKILLed, its devices back on the survivors', target: '≤ 30 s', value: (m) => m.clusterNodeLossS, met: (v) => v <= 30, format: (v) => `${v.toFixed(1)} s` },
  { label: 'cluster: idle RSS per device per node (largest node)', target: '≤ 20 kB', value: (m) => m.clusterBytesPerDevicePerNode, met: (v) => v <= 20_000, format: (v) => `${(v / 1000).toFixed(1)} kB` },
];

/** One evaluated row. */
export interface Verdict {
  label: string;
  target: string;
  value: number | undefined;
  shown: string;
  verdict: 'met' | 'not met' | 'not measured in this run';
}

/** Evaluates every figure against this run's measurements. */
export function verdicts(m: Measured, figures: readonly Figure[] = FIGURES): Verdict[] {
  return figures.map((f) => {
    const value = f.value(m);
    if (value === undefined || !Number.isFinite(value)) return { label: f.label, target: f.target, value: undefined, shown: '–', verdict: 'not measured in this run' };
    return { label: f.label, target: f.target, value, shown: f.format(value), verdict: f.met(value, m) ? 'met' : 'not met' };
  });
}

/** The table as text: figure, this run, target, verdict; then a count. */
export function formatVerdicts(rows: readonly Verdict[]): string {
  const head = ['figure', 'this run', 'target', 'verdict'];
  const cells = rows.map((r) => [r.label, r.shown, r.target, r.verdict]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => (i === 1 ? x.padStart(widths[i]!) : x.padEnd(widths[i]!))).join('  ').trimEnd();
  const met = rows.filter((r) => r.verdict === 'met').length;
  const measured = rows.filter((r) => r.value !== undefined).length;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line), '', `verdict: ${met} of ${rows.length} targets met (${measured} measured in this run, ${rows.length - measured} not measured)`].join('\n');
}
