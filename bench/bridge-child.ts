/**
 * The reference bridge in its own process, for the full-path benchmark (runtime → bridge HTTP → agent).
 * Run by the benchmarks: node --import tsx bench/bridge-child.ts '<bridge config JSON>'
 */
import { normalizeBridgeConfig } from '../src/config/bridge-config.js';
import { silentLogger } from '../src/base/logger.js';
import { BridgeServer } from '../src/bridge/server.js';
import { announceReady, exitOnSignal } from './child.js';

async function main(): Promise<void> {
  const bridge = new BridgeServer(normalizeBridgeConfig(JSON.parse(process.argv[2] ?? '{}')), { log: silentLogger() });
  const url = await bridge.start();
  exitOnSignal(() => bridge.stop());
  announceReady({ url });
}

main().catch((e: unknown) => {
  process.stderr.write(`bridge-child: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});
