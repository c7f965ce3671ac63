/**
 * The device side of the benchmarks, as it really runs: `startAgent` with a config (journal in WAL,
 * consent and audit wired, all built-in handlers, diagnostics enabled), connected to the driver's bridge.
 * Run by the benchmarks: node --import tsx bench/agent-child.ts '<agent config JSON>'
 */
import { openSync, readSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { normalizeAgentConfig } from '../src/config/agent-config.js';
import { TRANSPORT_CHANNELS } from '../src/protocol/ws-transport.js';
import { createLogger, silentLogger } from '../src/agent/logger.js';
import { startAgent } from '../src/agent/start-agent.js';
import { announceReady, exitOnSignal } from './child.js';

async function main(): Promise<void> {
  const cfg = normalizeAgentConfig(JSON.parse(process.argv[2] ?? '{}'));
  const log = cfg.log?.level && cfg.log.level !== 'silent' ? createLogger({ level: cfg.log.level, ...(cfg.log.file ? { file: cfg.log.file } : {}) }) : silentLogger();
  const stamps = process.env['BENCH_TIMELINE'] ? recordTimeline() : undefined;
  const running = await startAgent(cfg, log);
  const delays = process.env['BENCH_STALL'] ? recordDelays() : undefined;
  exitOnSignal(() => {
    if (stamps) writeFileSync(process.env['BENCH_TIMELINE']!, stamps.join('\n'));
    if (delays) writeFileSync(process.env['BENCH_STALL']!, JSON.stringify(delays()));
    return running.stop();
  });
  announceReady({ pid: process.pid, functions: running.agent.registry.ids().length });
}

/**
 * For `bench/timeline.ts`: per turn that wrote frames after a frame arrived, three monotonic stamps (ns,
 * comparable with the driver's `process.hrtime`): the first frame's arrival, the start and the end of
 * the write.
 */
function recordTimeline(): bigint[] {
  const stamps: bigint[] = [];
  let arrived = 0n;
  let flushing = 0n;
  TRANSPORT_CHANNELS.received.subscribe(() => {
    if (!arrived) arrived = process.hrtime.bigint();
  });
  TRANSPORT_CHANNELS.flushing.subscribe(() => {
    flushing = process.hrtime.bigint();
  });
  TRANSPORT_CHANNELS.flushed.subscribe(() => {
    if (arrived) stamps.push(arrived, flushing, process.hrtime.bigint());
    arrived = 0n;
  });
  return stamps;
}

/**
 * For `bench/journal-stall.ts`: the event loop's delay, sampled at 1 ms resolution and cut into 100 ms
 * windows, each `[wall-clock end ms, longest delay ms, longest on-CPU delay ms]`, so the driver can keep
 * the windows of its run (start-up is not part of it). The third figure (Linux: the main thread's
 * on-CPU time from /proc/thread-self/schedstat between two 1 ms ticks) counts only the time this
 * thread ran: on a busy machine, waiting for a core shows in the first figure and not in this one.
 * Returns the function that closes the last window and hands the list over.
 */
function recordDelays(): () => [number, number, number][] {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const cpu = threadCpuClock();
  let lastCpu = cpu?.() ?? 0;
  let maxCpu = 0;
  let tick: NodeJS.Timeout | undefined;
  const sample = () => {
    const c = cpu!();
    maxCpu = Math.max(maxCpu, (c - lastCpu) / 1e6);
    lastCpu = c;
    tick = setTimeout(sample, 1);
  };
  if (cpu) tick = setTimeout(sample, 1);
  const windows: [number, number, number][] = [];
  const cut = () => {
    windows.push([Date.now(), h.max / 1e6, cpu ? maxCpu : Number.NaN]);
    h.reset();
    maxCpu = 0;
  };
  const timer = setInterval(cut, 100);
  return () => {
    clearInterval(timer);
    clearTimeout(tick);
    cut();
    h.disable();
    return windows;
  };
}

/** The main thread's on-CPU time in ns (Linux), or undefined where it cannot be read. */
function threadCpuClock(): (() => number) | undefined {
  try {
    const fd = openSync('/proc/thread-self/schedstat', 'r');
    const buf = Buffer.alloc(128);
    const read = () => Number(buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0)).split(' ')[0]);
    return Number.isFinite(read()) ? read : undefined;
  } catch {
    return undefined;
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`agent-child: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});
