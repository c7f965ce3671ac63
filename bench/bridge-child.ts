/**
 * The reference bridge in its own process, for the full-path benchmark (runtime → bridge HTTP → agent); with
 * `store.kind: postgres` and `cluster.node_id`, a cluster node as `aios-device bridge` runs it (bench/cluster.ts).
 * Run by the benchmarks: node --import tsx bench/bridge-child.ts '<bridge config JSON>' | @<config file>
 */
import { readFileSync } from 'node:fs';
import { normalizeBridgeConfig } from '../src/config/bridge-config.js';
import { silentLogger } from '../src/base/logger.js';
import { BridgeServer } from '../src/bridge/server.js';
import { announceReady, exitOnSignal } from './child.js';

async function main(): Promise<void> {
  // `@file`: the config in a file (a config naming 10,000 device tokens is longer than one argument may be).
  const arg = process.argv[2] ?? '{}';
  const text = arg.startsWith('@') ? readFileSync(arg.slice(1), 'utf8') : arg;
  const config = normalizeBridgeConfig(JSON.parse(text));
  // Imported only for a node: the single process's bridge loads no PostgreSQL code (as with `aios-device bridge`).
  const bridge = config.store.kind === 'postgres'
    ? new (await import('../src/bridge/cluster/node-server.js')).ClusterNodeServer(config, { log: silentLogger() })
    : new BridgeServer(config, { log: silentLogger() });
  const url = await bridge.start();
  exitOnSignal(() => bridge.stop());
  announceReady({ url });
}

main().catch((e: unknown) => {
  process.stderr.write(`bridge-child: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});
