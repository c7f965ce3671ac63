/**
 * Measuring helpers shared by the benchmarks: sequential latency (one call in flight) and throughput
 * (a fixed number of calls with N in flight), both on `process.hrtime.bigint()`, and the median over
 * rounds (other work on the machine moves single runs around; rounds interleave the targets).
 */

/** Latency of sequential calls, in microseconds. */
export interface LatencyResult {
  n: number;
  p50Us: number;
  p99Us: number;
  meanUs: number;
}

/** Calls per second with `concurrency` calls in flight. */
export interface ThroughputResult {
  total: number;
  concurrency: number;
  callsPerS: number;
}

/** What one benchmark reports (medians over rounds when there were several). */
export interface BenchResult {
  name: string;
  latency: LatencyResult;
  throughput: ThroughputResult;
  /** Anything else worth printing (frame sizes, settings). */
  notes?: Record<string, string | number>;
}

/** How many calls each phase makes. */
export interface BenchCounts {
  warmup: number;
  latencyN: number;
  throughputN: number;
  concurrency: number;
  /** Rounds of (latency, throughput) per target, interleaved across targets; medians are reported. */
  rounds: number;
}

/** A peer under test, opened once and called many times. */
export interface BenchTarget {
  name: string;
  /** One no-op call; rejects if the answer is not the expected echo. */
  call(): Promise<unknown>;
  close(): Promise<void>;
  notes?: Record<string, string | number>;
  /** Calls in flight for this target's throughput, when not the run's (e.g. the full path with 32). */
  concurrency?: number;
  /** Measure throughput only (another target on the same peers measures its latency). */
  throughputOnly?: boolean;
}

/** The value at quantile q (0..1) of ascending `sorted`, nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (!sorted.length) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

/** Median of a list of numbers. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return Number.NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Runs `call` `n` times one after another and reports the latency distribution. */
export async function measureLatency(call: () => Promise<unknown>, n: number): Promise<LatencyResult> {
  const samples = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    samples[i] = Number(process.hrtime.bigint() - t0) / 1000;
  }
  samples.sort((a, b) => a - b);
  const mean = samples.reduce((s, x) => s + x, 0) / Math.max(1, n);
  return { n, p50Us: quantile(samples, 0.5), p99Us: quantile(samples, 0.99), meanUs: mean };
}

/** Makes `total` calls keeping `concurrency` of them in flight; reports calls per second. */
export async function measureThroughput(call: () => Promise<unknown>, total: number, concurrency: number): Promise<ThroughputResult> {
  let started = 0;
  const worker = async () => {
    while (started < total) {
      started++;
      await call();
    }
  };
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return { total, concurrency, callsPerS: total / s };
}

/**
 * How long every target is left alone after one was measured. A peer may defer work until it is idle
 * (the agent's journal table catches up 50 ms after the last write and takes tens of milliseconds;
 * audit rows are committed every 25 ms); without the pause, that work ran during the next target's
 * measurement and slowed it, not the peer that owed it.
 */
export const SETTLE_MS = 250;

/**
 * Measures every target side by side: warm-up each, then `rounds` times latency of each target in turn
 * and throughput of each target in turn, with SETTLE_MS of quiet after each. Reports per target the
 * median of each figure over the rounds.
 */
export async function measureTargets(targets: readonly BenchTarget[], c: BenchCounts, say: (line: string) => void = () => undefined, settleMs = SETTLE_MS): Promise<BenchResult[]> {
  const lat = targets.map(() => [] as LatencyResult[]);
  const thr = targets.map(() => [] as ThroughputResult[]);
  const settle = () => new Promise((r) => setTimeout(r, settleMs));
  for (const t of targets) {
    if (!t.throughputOnly) for (let i = 0; i < c.warmup; i++) await t.call();
    await measureThroughput(() => t.call(), Math.min(c.warmup, c.throughputN), c.concurrency);
    await settle();
  }
  for (let r = 0; r < c.rounds; r++) {
    say(`round ${r + 1}/${c.rounds}`);
    for (const [i, t] of targets.entries()) {
      if (t.throughputOnly) continue;
      lat[i]!.push(await measureLatency(() => t.call(), c.latencyN));
      await settle();
    }
    for (const [i, t] of targets.entries()) {
      thr[i]!.push(await measureThroughput(() => t.call(), c.throughputN, t.concurrency ?? c.concurrency));
      await settle();
    }
  }
  return targets.map((t, i) => ({
    name: t.name,
    latency: {
      n: t.throughputOnly ? 0 : c.latencyN,
      p50Us: median(lat[i]!.map((x) => x.p50Us)),
      p99Us: median(lat[i]!.map((x) => x.p99Us)),
      meanUs: median(lat[i]!.map((x) => x.meanUs)),
    },
    throughput: { total: c.throughputN, concurrency: t.concurrency ?? c.concurrency, callsPerS: median(thr[i]!.map((x) => x.callsPerS)) },
    ...(t.notes ? { notes: t.notes } : {}),
  }));
}
