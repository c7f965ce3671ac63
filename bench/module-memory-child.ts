/**
 * The child of bench/module-memory.ts: imports the agent's modules one group after another, in the order
 * the agent needs them, and after each group collects garbage (twice) and reads its memory; then starts
 * the agent itself (every built-in handler, diagnostics on, no bridge reachable) and reads it again after
 * `AIOS_MM_SETTLE_MS`. Prints one JSON line: the rows, each with the cumulative RSS and heap used.
 * Run with --expose-gc.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One measured step: what was added, and the process's memory after it. */
export interface ModuleMemoryStep {
  step: string;
  rssBytes: number;
  heapUsedBytes: number;
  externalBytes: number;
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function read(step: string): ModuleMemoryStep {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return { step, rssBytes: m.rss, heapUsedBytes: m.heapUsed, externalBytes: m.external };
}

/**
 * The groups, in the order the agent loads them; a module shared by two groups counts in the first. ajv is
 * not one: with the precompiled validators (`npm run build`) the agent at rest does not load its compiler.
 */
const GROUPS: [string, () => Promise<unknown>][] = [
  ['better-sqlite3 (native)', () => import('better-sqlite3')],
  ['ws', () => import('ws')],
  ['pino', () => import('pino')],
  ['@sinclair/typebox', () => import('@sinclair/typebox')],
  ['src/protocol (peer, messages, transports)', () => Promise.all([import('../src/protocol/peer.js'), import('../src/protocol/messages.js'), import('../src/protocol/ws-transport.js')])],
  ['src/agent (dispatcher, journal, session)', () => import('../src/agent/agent.js')],
  ['src/consent', () => import('../src/consent/index.js')],
  ['handlers/device', () => import('../handlers/device/index.js')],
  ['handlers/diagnostics', () => import('../handlers/diagnostics/index.js')],
  ['handlers/files', () => import('../handlers/files/index.js')],
  ['handlers/serial', () => import('../handlers/serial/index.js')],
  ['handlers/bluetooth', () => import('../handlers/bluetooth/index.js')],
  ['handlers/printer', () => import('../handlers/printer/index.js')],
  ['handlers/media', () => import('../handlers/media/index.js')],
  ['src/app (the rest: endpoint, discovery, config)', () => import('../src/app/start-agent.js')],
];

async function main(): Promise<void> {
  const rows: ModuleMemoryStep[] = [read('node, this script')];
  for (const [name, load] of GROUPS) {
    await load();
    rows.push(read(name));
  }
  const { startAgent } = await import('../src/app/start-agent.js');
  const { normalizeAgentConfig } = await import('../src/config/agent-config.js');
  const { silentLogger } = await import('../src/base/logger.js');
  const dir = mkdtempSync(join(tmpdir(), 'aios-module-memory-'));
  const cfg = normalizeAgentConfig({
    // Nothing listens there: the agent runs at rest, reconnecting with its backoff.
    bridge: { url: 'ws://127.0.0.1:9/v1/device', token: 'dt_module_memory' },
    identity: { workspace_id: 'ws_bench', user_id: 'u_bench', device_id: 'dev_bench', device_name: 'Bench device' },
    data_dir: join(dir, 'agent'),
    local_endpoint: { host: '127.0.0.1', port: 0, socket: join(dir, 'agent.sock') },
    handlers: { diagnostics: { enabled: true } },
  });
  const running = await startAgent(cfg, silentLogger());
  await new Promise((r) => setTimeout(r, Number(process.env['AIOS_MM_SETTLE_MS'] ?? 5000)));
  rows.push(read('the agent started and at rest (handlers created, journal open, endpoint listening)'));
  await running.stop();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(JSON.stringify(rows) + '\n');
}

main().catch((e: unknown) => {
  process.stderr.write(String(e instanceof Error ? e.stack : e) + '\n');
  process.exit(1);
});
