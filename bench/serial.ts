/**
 * The serial handler's benchmark (issue 15), in one run and on one machine:
 *   1. a raw serialport round trip on a socat pty: write `W\r\n`, read `  12.34 kg\r\n` (the bindings
 *      directly, no handler);
 *   2. `device.info` through the whole path (HTTP → bridge → agent, each in its own process);
 *   3. `serial.request` through the same whole path, to a scale on another pty pair;
 *   4. the handler's engine alone, in this process (`request` on a `PortPool`, the same code
 *      `serial.request` runs, without the agent around it), on a third pair: what the handler itself
 *      adds to the raw round trip, measured in the same run (a busy machine moves the others a lot).
 * The scale runs in its own process for 1, 3 and 4. Prints the table and the target's ratio:
 *   serial.request p50 ≤ device.info p50 + 1.5 × raw p50, i.e. (serial − info) / raw ≤ 1.5,
 * and, beside it, serial.request's handler's own time inside the agent (the `timings` each answer
 * carries).
 *
 * By default it then measures the same again with every process on one CPU (`taskset -c N`, inherited
 * by the children): a chain of five processes (driver, bridge, agent, socat, scale) on two CPUs pays
 * wake-ups across CPUs whose cost depends on where the scheduler puts each process, which moved the
 * ratio between 0.8 and 2.6 in back-to-back runs on an idle machine; on one CPU every hop is a context
 * switch on that CPU, which is what the code costs. Both are reported, neither replaces the other.
 *
 * Run: npm run bench:serial [-- --warmup N --latency N --throughput N --concurrency N --rounds N
 *        --pin-cpu N | --no-pinned --json]
 */
import { rmSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SerialPort } from 'serialport';
import { startPtyPair, type PtyPair } from '../test/peers/serial-pty.js';
import { benchFile, isMain, positiveInt, runMain, startChild, type BenchChild } from './child.js';
import { runtimeCaller, startDeviceStack, type DeviceStack } from './device-stack.js';
import { measureTargets, median, type BenchCounts, type BenchResult, type BenchTarget } from './stats.js';
import { PortPool } from '../handlers/serial/engine/pool.js';
import { realBinding } from '../handlers/serial/engine/binding.js';
import { request } from '../handlers/serial/engine/operations.js';

const ANSWER = '  12.34 kg\r\n';

/** The raw round trip: the bindings on ttyA, one exchange at a time. */
async function openRaw(path: string): Promise<BenchTarget> {
  const port = await SerialPort.binding.open({ path, baudRate: 9600 });
  const buf = Buffer.alloc(256);
  const cmd = Buffer.from('W\r\n');
  let chain: Promise<unknown> = Promise.resolve();
  const exchange = async () => {
    await port.write(cmd);
    let got = '';
    while (!got.endsWith('\r\n')) {
      const { bytesRead } = await port.read(buf, 0, buf.length);
      got += buf.toString('latin1', 0, bytesRead);
    }
    if (got !== ANSWER) throw new Error(`raw: unexpected answer ${JSON.stringify(got)}`);
  };
  return {
    name: 'raw serialport round trip (pty)',
    // One port, one exchange at a time: calls in flight queue here as they would on the device.
    call: () => (chain = chain.then(exchange, exchange)),
    close: () => port.close(),
  };
}

/** The handler's engine in this process: `serial.request`'s own code on a pooled port, no agent around it. */
function openEngine(path: string): BenchTarget {
  const pool = new PortPool({ binding: realBinding });
  const signal = new AbortController().signal;
  const args = { port: path, write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } };
  return {
    name: 'serial engine in-process (request on a pooled port)',
    async call() {
      const r = await request(pool, { path, settings: { baud: 9600 } }, args, signal);
      if (r.text !== ANSWER) throw new Error(`engine: unexpected answer ${JSON.stringify(r.text)}`);
      return r;
    },
    close: () => pool.dispose(),
  };
}

/** What one run measured. */
export interface SerialBenchReport {
  date: string;
  node: string;
  cpus: number;
  counts: BenchCounts;
  results: BenchResult[];
  /** (serial.request p50 − device.info p50) / raw p50; the target is ≤ 1.5. */
  overheadRatio: number;
  /** (engine in-process p50 − raw p50) / raw p50: the handler's own share of the overhead. */
  engineRatio: number;
  /** serial.request's handler inside the agent, from the `timings` of its answers (p50 over measured calls, µs). */
  inAgent: { totalUs: number; firstByteUs: number; calls: number };
  /** The CPU every process ran on (`taskset`), or null when the OS placed them. */
  pinnedCpu: number | null;
  /** The machine's 1-minute load average when the run started and when it ended. */
  load: [number, number];
  met: boolean;
}

/** Starts the pty pairs, the scale, the bridge and the agent; measures the three targets interleaved. */
export async function runSerialBench(counts: BenchCounts, say: (l: string) => void = () => undefined): Promise<SerialBenchReport> {
  const loadBefore = loadavg()[0]!;
  const pairs: PtyPair[] = [];
  let scaleChild: BenchChild<unknown> | undefined;
  let stack: DeviceStack | undefined;
  const open: BenchTarget[] = [];
  try {
    say('starting two socat pty pairs and the scale');
    pairs.push(await startPtyPair(), await startPtyPair(), await startPtyPair());
    const [rawPair, agentPair, enginePair] = pairs as [PtyPair, PtyPair, PtyPair];
    scaleChild = await startChild(benchFile('serial-scale-child'), [rawPair.b, agentPair.b, enginePair.b]);
    say('starting bridge and agent');
    stack = await startDeviceStack({ synchronous: 'normal', log: 'info', config: { grants: { serial: [agentPair.a] } } }, 'child');
    const raw = await openRaw(rawPair.a);
    open.push(raw);
    const info = runtimeCaller(stack, counts.concurrency, 'device.info', {}, (o) => typeof (o as { hostname?: unknown })?.hostname === 'string');
    open.push({ name: 'device.info, whole path', call: info.call, close: async () => info.close() });
    // Each answer's own timings (ms): the handler's time inside the agent, to split the difference.
    const timings: { total_ms: number; first_byte_ms: number | null }[] = [];
    const req = runtimeCaller(stack, counts.concurrency, 'serial.request', { port: agentPair.a, write: { text: 'W\r\n' }, until: { delimiter: '\r\n' } }, (o) => {
      const out = o as { text?: unknown; timings?: { total_ms: number; first_byte_ms: number | null } };
      if (out?.timings) timings.push(out.timings);
      return out?.text === ANSWER;
    });
    open.push({ name: 'serial.request, whole path', call: req.call, close: async () => req.close() });
    open.push(openEngine(enginePair.a));
    const results = await measureTargets(open, counts, say);
    const [r, i, s, e] = results as [BenchResult, BenchResult, BenchResult, BenchResult];
    const overheadRatio = (s.latency.p50Us - i.latency.p50Us) / r.latency.p50Us;
    const engineRatio = (e.latency.p50Us - r.latency.p50Us) / r.latency.p50Us;
    // The warm-up's answers are left out (its first call opened the port).
    const measured = timings.slice(counts.warmup + Math.min(counts.warmup, counts.throughputN));
    const inAgent = {
      totalUs: median(measured.map((t) => t.total_ms * 1000)),
      firstByteUs: median(measured.filter((t) => t.first_byte_ms !== null).map((t) => t.first_byte_ms! * 1000)),
      calls: measured.length,
    };
    return { date: new Date().toISOString(), node: process.version, cpus: availableParallelism(), counts, results, overheadRatio, engineRatio, inAgent, pinnedCpu: pinnedCpu(), load: [loadBefore, loadavg()[0]!], met: overheadRatio <= 1.5 };
  } finally {
    for (const t of open.reverse()) await t.close().catch(() => undefined);
    await stack?.stop();
    await scaleChild?.stop();
    for (const p of pairs) {
      await p.kill('SIGTERM');
      rmSync(p.dir, { recursive: true, force: true });
    }
  }
}

/** The CPU this process is pinned to (set by the pinned re-run), or null. */
function pinnedCpu(): number | null {
  const v = process.env['BENCH_SERIAL_PINNED_CPU'];
  return v === undefined ? null : Number(v);
}

/**
 * The same benchmark again with every process on `cpu`: this file re-run under `taskset -c cpu` (its
 * children inherit the affinity), its JSON report parsed. Undefined when taskset is missing.
 */
export function runPinned(cpu: number, args: string[], say: (l: string) => void = () => undefined): SerialBenchReport | undefined {
  const probe = spawnSync('taskset', ['--version'], { stdio: 'ignore' });
  if (probe.error) return undefined;
  say(`again with every process on CPU ${cpu} (taskset -c ${cpu})`);
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync('taskset', ['-c', String(cpu), process.execPath, ...process.execArgv, self, ...args, '--json', '--no-pinned'], {
    env: { ...process.env, BENCH_SERIAL_PINNED_CPU: String(cpu) },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 16 << 20,
  });
  if (r.status !== 0) throw new Error(`the pinned run failed (exit ${r.status})`);
  return JSON.parse(r.stdout) as SerialBenchReport;
}

/** The report as text. */
export function formatSerialReport(r: SerialBenchReport): string {
  const c = r.counts;
  const rows = r.results.map((x) => [x.name, x.latency.p50Us.toFixed(0), x.latency.p99Us.toFixed(0), x.throughput.callsPerS.toFixed(0)]);
  const head = ['benchmark', 'p50 µs', 'p99 µs', `calls/s (${c.concurrency} in flight)`];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const [raw, info, ser, eng] = r.results as [BenchResult, BenchResult, BenchResult, BenchResult];
  const where = r.pinnedCpu === null ? `${r.cpus} CPUs, placed by the OS` : `every process on CPU ${r.pinnedCpu} (taskset)`;
  return [
    `${r.date}  Node ${r.node}  ${where}  load ${r.load[0].toFixed(1)} → ${r.load[1].toFixed(1)}  warm-up ${c.warmup}; ${c.rounds} interleaved rounds of ${c.latencyN} sequential calls and ${c.throughputN} calls ${c.concurrency} in flight; medians over rounds`,
    '',
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `serial.request p50 − device.info p50 = ${(ser.latency.p50Us - info.latency.p50Us).toFixed(0)} µs = ${r.overheadRatio.toFixed(2)} × the raw round trip's p50 (${raw.latency.p50Us.toFixed(0)} µs)`,
    `serial.request's handler inside the agent (its answers' own timings, ${r.inAgent.calls} calls): p50 ${r.inAgent.totalUs.toFixed(0)} µs, the first byte ${r.inAgent.firstByteUs.toFixed(0)} µs after the write`,
    `the handler's engine alone adds ${(eng.latency.p50Us - raw.latency.p50Us).toFixed(0)} µs = ${r.engineRatio.toFixed(2)} × raw to the raw round trip (in-process, same run)`,
    `target: ≤ 1.5 × (serial.request p50 ≤ device.info p50 + 1.5 × raw p50): ${r.met ? 'met' : 'NOT met'}`,
  ].join('\n');
}

async function main(): Promise<void> {
  const env = (n: string, d: number) => process.env[`BENCH_${n}`] ?? String(d);
  const { values } = parseArgs({
    options: {
      warmup: { type: 'string', default: env('WARMUP', 200) },
      latency: { type: 'string', default: env('LATENCY', 500) },
      throughput: { type: 'string', default: env('THROUGHPUT', 500) },
      concurrency: { type: 'string', default: env('CONCURRENCY', 4) },
      rounds: { type: 'string', default: env('ROUNDS', 3) },
      'pin-cpu': { type: 'string' },
      'no-pinned': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const say = (l: string) => process.stderr.write(l + '\n');
  const report = await runSerialBench(
    { warmup: positiveInt(values.warmup, 'warmup'), latencyN: positiveInt(values.latency, 'latency'), throughputN: positiveInt(values.throughput, 'throughput'), concurrency: positiveInt(values.concurrency, 'concurrency'), rounds: positiveInt(values.rounds, 'rounds') },
    say,
  );
  // The pinned run gets the same counts; the last CPU by default (the first takes most interrupts here).
  const counts = ['warmup', 'latency', 'throughput', 'concurrency', 'rounds'].flatMap((k) => [`--${k}`, String(values[k as 'warmup'])]);
  const pinned = values['no-pinned'] ? undefined : runPinned(values['pin-cpu'] !== undefined ? nonNegativeInt(values['pin-cpu']) : availableParallelism() - 1, counts, say);
  if (values.json) {
    process.stdout.write(JSON.stringify(pinned ? [report, pinned] : report, null, 2) + '\n');
    return;
  }
  process.stdout.write(formatSerialReport(report) + '\n');
  if (pinned) process.stdout.write('\n' + formatSerialReport(pinned) + '\n');
  else if (!values['no-pinned']) process.stdout.write('\n(the run on one CPU was skipped: taskset was not found)\n');
}

function nonNegativeInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--pin-cpu wants a CPU number, got ${v}`);
  return n;
}

if (isMain(import.meta.url)) runMain('bench:serial', main);
