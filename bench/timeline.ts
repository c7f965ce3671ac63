/**
 * Where the agent round trip's time goes: the benchmark's no-op call, one in flight, cut into four
 * segments with monotonic stamps taken in both processes (the driver's around each request, the agent's
 * from its transport's diagnostics channels), and the CPU each side spends per call with 64 in flight.
 * `npm run bench` says how fast the call is; this says which side and which part to look at.
 *
 * Run: npm run bench:timeline [-- --warmup N] [--calls N] [--burst N] [--concurrency N] [--log info|silent] [--json]
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { METHODS, type Outcome } from '../src/protocol/messages.js';
import { invokeParams, ECHO_VALUE } from './agent-roundtrip.js';
import { isMain, positiveInt, runMain } from './child.js';
import { BENCH_IDS, startDeviceStack, type AgentSettings } from './device-stack.js';

export interface TimelineOptions {
  warmup: number;
  /** Sequential calls that are cut into segments. */
  calls: number;
  /** Calls of the CPU measurement, `concurrency` in flight. */
  burst: number;
  concurrency: number;
  log: AgentSettings['log'];
}

export interface Spread {
  p50Us: number;
  p90Us: number;
}

export interface TimelineReport {
  /** Sequential calls whose agent stamps were found (all of them, unless a stamp went missing). */
  matched: number;
  segments: ({ name: string } & Spread)[];
  roundTrip: Spread;
  /** CPU per call with `concurrency` in flight (Linux only: read from /proc). */
  cpu?: { agentMainUs: number; agentOtherThreadsUs: number; driverUs: number; calls: number };
}

/** The four segments, in order; they add up to each call's round trip. */
export const SEGMENTS = [
  'bridge → agent: invoke sent, kernel, agent wakes, reads and parses the frame',
  'agent: from the invoke frame to its frames being written (the call itself)',
  'agent: writing the call\'s frames (one writev; the kernel delivers them)',
  'agent → bridge: bridge wakes, parses the call\'s frames (the response alone for a fast call on a 1.1+ session), the request resolves',
] as const;

/** Runs the timeline: starts a bridge here and an agent child that records its stamps, measures, stops. */
export async function runTimeline(o: TimelineOptions): Promise<TimelineReport> {
  const file = join(tmpdir(), `aios-bench-timeline-${process.pid}.txt`);
  const stack = await startDeviceStack({ synchronous: 'normal', log: o.log, env: { BENCH_TIMELINE: file } }, 'here');
  const sent: bigint[] = [];
  const done: bigint[] = [];
  let cpu: TimelineReport['cpu'];
  try {
    const conn = stack.bridge!.hub.get(BENCH_IDS.device_id);
    if (!conn) throw new Error('the agent is not connected');
    const call = async (): Promise<void> => {
      const out = await conn.peer.request<Outcome>(METHODS.invoke, invokeParams(), 30_000);
      if (out.state !== 'completed' || (out.output as { value?: unknown } | undefined)?.value !== ECHO_VALUE) throw new Error(`diagnostics.echo did not complete: ${out.state}`);
    };
    for (let i = 0; i < o.warmup; i++) await call();
    for (let i = 0; i < o.calls; i++) {
      sent.push(process.hrtime.bigint());
      await call();
      done.push(process.hrtime.bigint());
    }
    cpu = await measureCpu(stack.agent.info.pid, o, call);
  } finally {
    await stack.stop();
  }
  try {
    const text = readFileSync(file, 'utf8');
    return { ...cutSegments(sent, done, text ? text.split('\n').map(BigInt) : []), ...(cpu ? { cpu } : {}) };
  } finally {
    rmSync(file, { force: true });
  }
}

/**
 * Matches each driver call [sent, done] with the agent's first stamp triple after `sent` and cuts it
 * into the four segments. A call whose triple does not start inside its own window is not counted.
 */
export function cutSegments(sent: bigint[], done: bigint[], agent: bigint[]): Pick<TimelineReport, 'matched' | 'segments' | 'roundTrip'> {
  const parts: number[][] = SEGMENTS.map(() => []);
  const rt: number[] = [];
  let j = 0;
  for (let k = 0; k < sent.length; k++) {
    const s = sent[k]!;
    const r = done[k]!;
    while (j + 2 < agent.length && agent[j]! < s) j += 3;
    if (j + 2 >= agent.length) break;
    const [m, w0] = [agent[j]!, agent[j + 1]!];
    if (!(m > s && w0 < r)) continue;
    // On two cores the bridge can have the answer before the agent's writev has returned.
    const w1 = agent[j + 2]! < r ? agent[j + 2]! : r;
    [m - s, w0 - m, w1 - w0, r - w1].forEach((d, i) => parts[i]!.push(Number(d) / 1000));
    rt.push(Number(r - s) / 1000);
  }
  return { matched: rt.length, segments: SEGMENTS.map((name, i) => ({ name, ...spread(parts[i]!) })), roundTrip: spread(rt) };
}

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(s.length * q))]! : NaN);
  return { p50Us: at(0.5), p90Us: at(0.9) };
}

/** CPU per call of the agent's threads (from /proc) and of this process, over calls `concurrency` in flight. */
async function measureCpu(pid: number, o: TimelineOptions, call: () => Promise<void>): Promise<TimelineReport['cpu']> {
  if (process.platform !== 'linux') return undefined;
  const before = threadTicks(pid);
  const mine = process.cpuUsage();
  let next = 0;
  await Promise.all(Array.from({ length: o.concurrency }, async () => {
    while (next++ < o.burst) await call();
  }));
  const used = process.cpuUsage(mine);
  const after = threadTicks(pid);
  // utime + stime are in clock ticks of 1/100 s (USER_HZ on Linux).
  const us = (ticks: number) => (ticks * 10_000) / o.burst;
  let main = 0;
  let other = 0;
  for (const [tid, t] of after) {
    const d = t - (before.get(tid) ?? 0);
    if (tid === pid) main += d;
    else other += d;
  }
  return { agentMainUs: us(main), agentOtherThreadsUs: us(other), driverUs: (used.user + used.system) / o.burst, calls: o.burst };
}

function threadTicks(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      out.set(Number(tid), Number(f[11]) + Number(f[12]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** The report as text. */
export function formatTimeline(r: TimelineReport, o: TimelineOptions): string {
  const us = (x: Spread) => `${x.p50Us.toFixed(1).padStart(7)} µs  (p90 ${x.p90Us.toFixed(1)})`;
  const lines = [
    `where the agent round trip's time goes: ${r.matched} of ${o.calls} sequential calls matched; p50 per segment (the p50s need not add up)`,
    ...r.segments.map((s) => `  ${s.name.padEnd(76)} ${us(s)}`),
    `  ${'round trip'.padEnd(76)} ${us(r.roundTrip)}`,
  ];
  if (r.cpu) {
    lines.push(
      '',
      `CPU per call, ${r.cpu.calls} calls ${o.concurrency} in flight (from /proc, 10 ms ticks):`,
      `  agent main thread ${r.cpu.agentMainUs.toFixed(1)} µs; agent's other threads (GC, compiler, audit worker) ${r.cpu.agentOtherThreadsUs.toFixed(1)} µs; driver (the bridge) ${r.cpu.driverUs.toFixed(1)} µs`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      warmup: { type: 'string', default: '3000' },
      calls: { type: 'string', default: '5000' },
      burst: { type: 'string', default: '20000' },
      concurrency: { type: 'string', default: '64' },
      log: { type: 'string', default: 'info' },
      json: { type: 'boolean', default: false },
    },
  });
  if (values.log !== 'info' && values.log !== 'silent') throw new Error('--log must be info or silent');
  const o: TimelineOptions = { warmup: positiveInt(values.warmup, 'warmup'), calls: positiveInt(values.calls, 'calls'), burst: positiveInt(values.burst, 'burst'), concurrency: positiveInt(values.concurrency, 'concurrency'), log: values.log };
  const r = await runTimeline(o);
  process.stdout.write((values.json ? JSON.stringify(r, null, 2) : formatTimeline(r, o)) + '\n');
}

if (isMain(import.meta.url)) runMain('bench:timeline', main);
