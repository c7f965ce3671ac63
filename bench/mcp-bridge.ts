/**
 * The bridge's MCP endpoint against its HTTP API (issue 33, docs/mcp.md): the same `device.info` call on the
 * same bridge (its own process) and agent (its own process), once as MCP `tools/call` through the official
 * SDK's `Client` + `StreamableHTTPClientTransport` on `/v1/mcp/devices/<id>`, once as `POST /v1/calls` with
 * `wait: true` on keep-alive connections. Interleaved rounds, medians. Target: MCP p50 ≤ 1.3× the HTTP API's.
 * The MCP client lists the tools first, as a real client does (so it checks `structuredContent` against each
 * tool's `outputSchema`). The same two clients are also measured against a server that answers with the bytes
 * the bridge answered and does nothing else (bench/canned-answers-child.ts): the clients' own floor, so the
 * report shows how much of the gap the MCP client costs by itself.
 *
 * Run: npm run bench:mcp [-- --rounds N] [--latency N] [--throughput N] [--concurrency N]
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { benchFile, isMain, positiveInt, runMain, startChild } from './child.js';
import type { CannedAnswers } from './canned-answers-child.js';
import { BENCH_IDS, runtimeCaller, startDeviceStack, type AgentSettings, type DeviceStack } from './device-stack.js';
import { measureTargets, type BenchCounts, type BenchResult, type BenchTarget } from './stats.js';

/** The p50 target of issue 33: MCP over HTTP API. */
export const MCP_P50_TARGET = 1.3;

const isInfo = (o: unknown): boolean => typeof (o as { hostname?: unknown } | undefined)?.hostname === 'string';

/** The targets' names, in the order of `McpBenchReport.results`. */
export const MCP_BENCH_TARGETS = [
  'POST /v1/calls (wait: true), device.info',
  'MCP tools/call (SDK client), device-info',
  'floor: node:http client, canned answer',
  'floor: SDK client, canned answer',
] as const;

export interface McpBenchReport {
  results: BenchResult[];
  /** MCP p50 / HTTP API p50. */
  p50Ratio: number;
  /**
   * What the SDK client costs by itself at p50 beyond node:http (both against canned answers), as a fraction of
   * the HTTP API's p50. The target leaves MCP 0.3× of it; a client whose own extra is larger cannot meet it.
   */
  clientExtraOfHttpP50: number;
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
  let canned: Awaited<ReturnType<typeof startCanned>> | undefined;
  try {
    await client.connect(mcpTransport(`${stack.url}/v1/mcp/devices/${BENCH_IDS.device_id}`, stack.runtimeToken));
    // As a real client does (docs/mcp.md): from now on it checks structuredContent against the outputSchema.
    const tools = await client.listTools();
    canned = await startCanned(stack, counts.concurrency, tools, (await client.callTool({ name: 'device-info', arguments: {} })) as CallToolResult);
    const targets: BenchTarget[] = [
      { name: MCP_BENCH_TARGETS[0], call: http.call, close: async () => undefined },
      { name: MCP_BENCH_TARGETS[1], call: () => callInfo(client), close: async () => undefined },
      { name: MCP_BENCH_TARGETS[2], call: canned.http.call, close: async () => undefined },
      { name: MCP_BENCH_TARGETS[3], call: () => callInfo(canned!.client), close: async () => undefined },
    ];
    const before = loadavg()[0]!;
    const results = await measureTargets(targets, counts, say);
    const [h, m, fh, fm] = results as [BenchResult, BenchResult, BenchResult, BenchResult];
    return {
      results,
      p50Ratio: m.latency.p50Us / h.latency.p50Us,
      clientExtraOfHttpP50: (fm.latency.p50Us - fh.latency.p50Us) / h.latency.p50Us,
      throughputRatio: m.throughput.callsPerS / h.throughput.callsPerS,
      load: [before, loadavg()[0]!],
    };
  } finally {
    await client.close().catch(() => undefined);
    http.close();
    await canned?.stop();
    await stack.stop();
  }
}

function mcpTransport(url: string, token: string): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
}

async function callInfo(client: Client): Promise<void> {
  const r = (await client.callTool({ name: 'device-info', arguments: {} })) as CallToolResult;
  if (r.isError || !isInfo(r.structuredContent)) throw new Error(`device-info answered ${JSON.stringify(r).slice(0, 300)}`);
}

/** The canned-answers server with what the bridge answered, and the same two clients pointed at it. */
async function startCanned(stack: DeviceStack, concurrency: number, tools: unknown, callResult: CallToolResult) {
  const r = await fetch(`${stack.url}/v1/calls`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.runtimeToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ workspace_id: BENCH_IDS.workspace_id, device_id: BENCH_IDS.device_id, function: 'device.info', arguments: {}, wait: true }),
  });
  const answers: CannedAnswers = { httpBody: await r.text(), toolsList: JSON.stringify(tools), toolsCall: JSON.stringify(callResult) };
  // In a file: the tools list of a device with every built-in handler (≈ 80 kB) nears the 128 KiB limit of one argument.
  const file = join(stack.dir, 'canned-answers.json');
  writeFileSync(file, JSON.stringify(answers));
  const child = await startChild<{ url: string }>(benchFile('canned-answers-child'), ['@' + file]);
  const http = runtimeCaller({ ...stack, url: child.info.url }, concurrency, 'device.info', {}, isInfo);
  const client = new Client({ name: 'aios-bench', version: '1.0.0' });
  try {
    await client.connect(mcpTransport(`${child.info.url}/mcp`, stack.runtimeToken));
    await client.listTools();
  } catch (e) {
    await child.stop();
    throw e;
  }
  return {
    http,
    client,
    async stop() {
      await client.close().catch(() => undefined);
      http.close();
      await child.stop();
    },
  };
}

export function formatMcpReport(r: McpBenchReport, counts: BenchCounts): string {
  const lines = [`${new Date().toISOString()}  Node ${process.version}  ${counts.rounds} interleaved rounds of ${counts.latencyN} sequential calls and ${counts.throughputN} calls ${counts.concurrency} in flight; medians`, ''];
  for (const x of r.results) lines.push(`${x.name.padEnd(44)} p50 ${x.latency.p50Us.toFixed(0).padStart(6)} µs  p99 ${x.latency.p99Us.toFixed(0).padStart(6)} µs  ${x.throughput.callsPerS.toFixed(0).padStart(6)} calls/s`);
  lines.push('');
  lines.push(`MCP p50 / HTTP API p50           ${r.p50Ratio.toFixed(2)}×   (target ≤ ${MCP_P50_TARGET}: ${r.p50Ratio <= MCP_P50_TARGET ? 'met' : 'not met'})`);
  lines.push(`MCP throughput / HTTP API        ${r.throughputRatio.toFixed(2)}×`);
  lines.push(`SDK client's own extra at p50    ${r.clientExtraOfHttpP50.toFixed(2)}× the HTTP API's p50   (floor: SDK client − node:http client, canned answers; the target leaves MCP ${(MCP_P50_TARGET - 1).toFixed(1)}×)`);
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
