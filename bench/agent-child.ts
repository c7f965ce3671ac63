/**
 * The device side of the benchmarks, as it really runs: `startAgent` with a config (journal in WAL,
 * consent and audit wired, all built-in handlers, diagnostics enabled), connected to the driver's bridge.
 * Run by the benchmarks: node --import tsx bench/agent-child.ts '<agent config JSON>'
 */
import { normalizeAgentConfig } from '../src/config/agent-config.js';
import { createLogger, silentLogger } from '../src/agent/logger.js';
import { startAgent } from '../src/agent/start-agent.js';
import { announceReady, exitOnSignal } from './child.js';

async function main(): Promise<void> {
  const cfg = normalizeAgentConfig(JSON.parse(process.argv[2] ?? '{}'));
  const log = cfg.log?.level && cfg.log.level !== 'silent' ? createLogger({ level: cfg.log.level, ...(cfg.log.file ? { file: cfg.log.file } : {}) }) : silentLogger();
  const running = await startAgent(cfg, log);
  exitOnSignal(() => running.stop());
  announceReady({ pid: process.pid, functions: running.agent.registry.ids().length });
}

main().catch((e: unknown) => {
  process.stderr.write(`agent-child: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});
