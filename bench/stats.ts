/**
 * Measuring helpers shared by the benchmarks: sequential latency (one call in flight) and throughput
 * (a fixed number of calls with N in flight), both on `process.hrtime.bigint()`.
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

/** What one benchmark reports. */
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
}

/** The value at quantile q (0..1) of ascending `sorted`, nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (!sorted.length) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
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

/** Warm-up, then latency, then throughput, with the same call. */
export async function runPhases(name: string, call: () => Promise<unknown>, c: BenchCounts): Promise<BenchResult> {
  for (let i = 0; i < c.warmup; i++) await call();
  const latency = await measureLatency(call, c.latencyN);
  const throughput = await measureThroughput(call, c.throughputN, c.concurrency);
  return { name, latency, throughput };
}
