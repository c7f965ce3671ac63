/**
 * What the reference bridge adds to a call (issue 21, the full path): the agent round trip (the driver
 * plays the bridge and sends invokes on the device WebSocket) against the full path (runtime HTTP
 * `POST /v1/calls` with `wait: true` → the bridge in its own process → the agent → back), and, when
 * `--baseline DIR` names another checkout (e.g. `git archive <commit> | tar -x -C DIR` with a
 * `node_modules` link), the same full path through that checkout's bridge: before and after in one run,
 * interleaved rounds, medians.
 *
 * Run: npm run bench:bridge [-- --baseline DIR] [--rounds N] [--latency N] [--throughput N] [--concurrency N]
 *        [--profile DIR] (CPU profiles of the bridge processes and agents)
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { openAgentRoundtrip, ECHO_VALUE } from './agent-roundtrip.js';
import { isMain, positiveInt, runMain } from './child.js';
import { runtimeCaller, startDeviceStack, type AgentSettings } from './device-stack.js';
import { measureTargets, type BenchTarget } from './stats.js';

/** The bridge child of this checkout, from source (so that a baseline checkout, also from source, runs the same way). */
const OWN_BRIDGE_CHILD = fileURLToPath(new URL(import.meta.url.endsWith('.js') ? '../../bench/bridge-child.ts' : './bridge-child.ts', import.meta.url));

async function openPath(settings: AgentSettings, concurrency: number, name: string, bridgeChild: string): Promise<BenchTarget> {
  const stack = await startDeviceStack(settings, 'child', bridgeChild);
  const caller = runtimeCaller(stack, concurrency, 'diagnostics.echo', { value: ECHO_VALUE }, (o) => (o as { value?: unknown } | undefined)?.value === ECHO_VALUE);
  return {
    name,
    call: caller.call,
    async close() {
      caller.close();
      await stack.stop();
    },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      baseline: { type: 'string' },
      warmup: { type: 'string', default: '1000' },
      latency: { type: 'string', default: '1000' },
      throughput: { type: 'string', default: '3000' },
      concurrency: { type: 'string', default: '32' },
      rounds: { type: 'string', default: '3' },
      profile: { type: 'string' },
    },
  });
  const profileDir = values.profile ? resolve(values.profile) : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const settings: AgentSettings = { synchronous: 'normal', log: 'silent', ...(profileDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}) };
  const counts = { warmup: positiveInt(values.warmup, 'warmup'), latencyN: positiveInt(values.latency, 'latency'), throughputN: positiveInt(values.throughput, 'throughput'), concurrency: positiveInt(values.concurrency, 'concurrency'), rounds: positiveInt(values.rounds, 'rounds') };
  const say = (l: string) => process.stderr.write(l + '\n');
  const open: BenchTarget[] = [];
  try {
    say('starting the agent round trip');
    const agent = await openAgentRoundtrip(settings);
    open.push(agent);
    say('starting the full path through this checkout\'s bridge');
    const own = await openPath(settings, counts.concurrency, 'full path, this bridge', OWN_BRIDGE_CHILD);
    open.push(own);
    let base: BenchTarget | undefined;
    if (values.baseline) {
      const file = join(resolve(values.baseline), 'bench', 'bridge-child.ts');
      if (!existsSync(file)) throw new Error(`--baseline: ${file} does not exist`);
      say(`starting the full path through the baseline bridge (${values.baseline})`);
      base = await openPath(settings, counts.concurrency, 'full path, baseline bridge', file);
      open.push(base);
    }
    const m = await measureTargets(open, counts, say);
    const lines = [`${new Date().toISOString()}  Node ${process.version}  ${counts.rounds} interleaved rounds of ${counts.latencyN} sequential calls and ${counts.throughputN} calls ${counts.concurrency} in flight; medians`, ''];
    for (const r of m) lines.push(`${r.name.padEnd(40)} p50 ${r.latency.p50Us.toFixed(0).padStart(6)} µs  p99 ${r.latency.p99Us.toFixed(0).padStart(6)} µs  ${r.throughput.callsPerS.toFixed(0).padStart(6)} calls/s`);
    lines.push('');
    const a = m[0]!;
    for (const r of m.slice(1)) {
      lines.push(`${r.name}: throughput / agent round trip ${(r.throughput.callsPerS / a.throughput.callsPerS).toFixed(2)}×   (target ≥ 0.5)`);
      lines.push(`${r.name}: p50 / agent round trip p50   ${(r.latency.p50Us / a.latency.p50Us).toFixed(2)}×   (target ≤ 2.0)`);
    }
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    for (const t of open.reverse()) await t.close().catch(() => undefined);
  }
}

if (isMain(import.meta.url)) runMain('bench:bridge', main);
