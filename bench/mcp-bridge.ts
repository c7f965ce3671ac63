/**
 * The bridge's MCP endpoint against its HTTP API (issue 33, docs/mcp.md): the same `device.info` call on the
 * same bridge (its own process) and agent (its own process), once as MCP `tools/call` through the official
 * SDK's `Client` + `StreamableHTTPClientTransport` on `/v1/mcp/devices/<id>`, once as `POST /v1/calls` with
 * `wait: true` on keep-alive connections. Interleaved rounds, medians. Target: MCP p50 ≤ 1.3× the HTTP API's.
 *
 * Run: npm run bench:mcp [-- --rounds N] [--latency N] [--throughput N] [--concurrency N]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isMain, positiveInt, runMain } from './child.js';
import { BENCH_IDS, runtimeCaller, startDeviceStack, type AgentSettings } from './device-stack.js';
import { measureTargets, type BenchCounts, type BenchResult, type BenchTarget } from './stats.js';

/** The p50 target of issue 33: MCP over HTTP API. */
export const MCP_P50_TARGET = 1.3;

const isInfo = (o: unknown): boolean => typeof (o as { hostname?: unknown } | undefined)?.hostname === 'string';

export interface McpBenchReport {
  results: BenchResult[];
  /** MCP p50 / HTTP API p50. */
  p50Ratio: number;
  /** MCP throughput / HTTP API throughput. */
  throughputRatio: number;
  /** The machine's 1-minute load average before and after the measurement (other work moves the figures). */
  load: [number, number];
}

/** Starts one bridge and one agent, measures both ways of calling `device.info`, stops them. */
export async function runMcpBench(counts: BenchCounts, settings: AgentSettings = { synchronous: 'normal', log: 'silent' }, say: (l: string) => void = () => undefined): Promise<McpBenchReport> {
  const stack = await startDeviceStack(settings, 'child');
  const http = runtimeCaller(stack, counts.concurrency, 'device.info', {}, isInfo);
  const client = new Client({ name: 'aios-bench', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.url}/v1/mcp/devices/${BENCH_IDS.device_id}`), { requestInit: { headers: { Authorization: `Bearer ${stack.runtimeToken}` } } }));
    const targets: BenchTarget[] = [
      { name: 'POST /v1/calls (wait: true), device.info', call: http.call, close: async () => undefined },
      {
        name: 'MCP tools/call (SDK client), device-info',
        async call() {
          const r = (await client.callTool({ name: 'device-info', arguments: {} })) as CallToolResult;
          if (r.isError || !isInfo(r.structuredContent)) throw new Error(`device-info answered ${JSON.stringify(r).slice(0, 300)}`);
        },
        close: async () => undefined,
      },
    ];
    const before = loadavg()[0]!;
    const results = await measureTargets(targets, counts, say);
    const [h, m] = results as [BenchResult, BenchResult];
    return { results, p50Ratio: m.latency.p50Us / h.latency.p50Us, throughputRatio: m.throughput.callsPerS / h.throughput.callsPerS, load: [before, loadavg()[0]!] };
  } finally {
    await client.close().catch(() => undefined);
    http.close();
    await stack.stop();
  }
}

export function formatMcpReport(r: McpBenchReport, counts: BenchCounts): string {
  const lines = [`${new Date().toISOString()}  Node ${process.version}  ${counts.rounds} interleaved rounds of ${counts.latencyN} sequential calls and ${counts.throughputN} calls ${counts.concurrency} in flight; medians`, ''];
  for (const x of r.results) lines.push(`${x.name.padEnd(44)} p50 ${x.latency.p50Us.toFixed(0).padStart(6)} µs  p99 ${x.latency.p99Us.toFixed(0).padStart(6)} µs  ${x.throughput.callsPerS.toFixed(0).padStart(6)} calls/s`);
  lines.push('');
  lines.push(`MCP p50 / HTTP API p50           ${r.p50Ratio.toFixed(2)}×   (target ≤ ${MCP_P50_TARGET}: ${r.p50Ratio <= MCP_P50_TARGET ? 'met' : 'not met'})`);
  lines.push(`MCP throughput / HTTP API        ${r.throughputRatio.toFixed(2)}×`);
  lines.push(`load average (1 min)             ${r.load[0].toFixed(2)} before, ${r.load[1].toFixed(2)} after`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      warmup: { type: 'string', default: '300' },
      latency: { type: 'string', default: '1000' },
      throughput: { type: 'string', default: '3000' },
      concurrency: { type: 'string', default: '16' },
      rounds: { type: 'string', default: '3' },
    },
  });
  const counts: BenchCounts = { warmup: positiveInt(values.warmup, 'warmup'), latencyN: positiveInt(values.latency, 'latency'), throughputN: positiveInt(values.throughput, 'throughput'), concurrency: positiveInt(values.concurrency, 'concurrency'), rounds: positiveInt(values.rounds, 'rounds') };
  const r = await runMcpBench(counts, undefined, (l) => process.stderr.write(l + '\n'));
  process.stdout.write(formatMcpReport(r, counts) + '\n');
}

if (isMain(import.meta.url)) runMain('bench:mcp', main);
