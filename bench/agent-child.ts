/**
 * The device side of the benchmarks, as it really runs: `startAgent` with a config (journal in WAL,
 * consent and audit wired, all built-in handlers, diagnostics enabled), connected to the driver's bridge.
 * Run by the benchmarks: node --import tsx bench/agent-child.ts '<agent config JSON>'
 */
import { writeFileSync } from 'node:fs';
import { normalizeAgentConfig } from '../src/config/agent-config.js';
import { TRANSPORT_CHANNELS } from '../src/protocol/ws-transport.js';
import { createLogger, silentLogger } from '../src/base/logger.js';
import { startAgent } from '../src/app/start-agent.js';
import { announceReady, exitOnSignal } from './child.js';

async function main(): Promise<void> {
  const cfg = normalizeAgentConfig(JSON.parse(process.argv[2] ?? '{}'));
  const log = cfg.log?.level && cfg.log.level !== 'silent' ? createLogger({ level: cfg.log.level, ...(cfg.log.file ? { file: cfg.log.file } : {}) }) : silentLogger();
  const stamps = process.env['BENCH_TIMELINE'] ? recordTimeline() : undefined;
  const running = await startAgent(cfg, log);
  exitOnSignal(() => {
    if (stamps) writeFileSync(process.env['BENCH_TIMELINE']!, stamps.join('\n'));
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

main().catch((e: unknown) => {
  process.stderr.write(`agent-child: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});
