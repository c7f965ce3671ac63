/**
 * Out-of-process adapters (issue 35): a no-op call to a JavaScript adapter served by the adapter host in
 * its bubblewrap sandbox, against the same no-op function called in the agent's process. Measured at the
 * function's `run` (what the adapter's process adds; the agent's call path in front is the same for both):
 * p50 of sequential calls, throughput with 8 calls at a time, and the RSS the adapter's processes add
 * (bwrap and the host's node, from /proc). One run; prints JSON.
 *
 *   npx tsx bench/adapter-process.ts [calls]
 */
import { mkdtemp, mkdir, readFile, readdir, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { McpAdapter } from '../src/discovery/mcp-adapter.js';
import { silentLogger } from '../src/base/logger.js';
import { standaloneTemp } from '../src/sdk/temp.js';
import type { CallContext, FunctionDefinition } from '../src/sdk/index.js';

const N = Number(process.argv[2] ?? 2000);
const NOOP = `export default { name: 'bench.noop', create() { return [{ descriptor: { id: 'bench.noop' }, async run() { return {}; } }]; } };\n`;

function ctx(): CallContext {
  const log = silentLogger();
  return { callId: 'c', functionId: 'bench.noop', signal: new AbortController().signal, requester: undefined, log, blobs: {} as never, progress() {}, commit() {}, resources: [], ...standaloneTemp() };
}

async function measure(fn: FunctionDefinition<never, unknown>): Promise<{ p50_ms: number; p99_ms: number; calls_per_s: number }> {
  const c = ctx();
  for (let i = 0; i < 200; i++) await fn.run({} as never, c); // warm up
  const t: number[] = [];
  for (let i = 0; i < N; i++) {
    const s = performance.now();
    await fn.run({} as never, c);
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  const start = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next++ < N) await fn.run({} as never, c);
  }));
  const secs = (performance.now() - start) / 1000;
  return { p50_ms: +t[Math.floor(N / 2)]!.toFixed(4), p99_ms: +t[Math.floor(N * 0.99)]!.toFixed(4), calls_per_s: Math.round(N / secs) };
}

/** RSS (KiB) of a process and all its descendants. */
async function treeRssKiB(pid: number): Promise<number> {
  const children = new Map<number, number[]>();
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const stat = await readFile(`/proc/${d}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)!.push(Number(d));
  }
  let total = 0;
  const walk = async (p: number): Promise<void> => {
    const status = await readFile(`/proc/${p}/status`, 'utf8').catch(() => '');
    total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    for (const c of children.get(p) ?? []) await walk(c);
  };
  await walk(pid);
  return total;
}

const root = await mkdtemp(join(tmpdir(), 'aios-bench-adapter-'));
try {
  await mkdir(join(root, 'code'));
  await mkdir(join(root, 'data'));
  await writeFile(join(root, 'code', 'index.mjs'), NOOP);
  const inProcess: FunctionDefinition<never, unknown> = { descriptor: { id: 'bench.noop' } as never, run: async () => ({}) };
  const adapter = new McpAdapter({
    id: 'bench.noop', name: 'Bench', version: '1.0.0', spec: { command: process.execPath, prefix: 'host' },
    host: { entry: 'index.mjs', skills: [{ id: 'bench.noop', name: 'No-op', permission_level: 'public' }], adapter: { version: '1.0.0' } },
    codeDir: join(root, 'code'), signedFiles: new Set(['index.mjs']), dataDir: join(root, 'data'), allowUnsandboxed: false,
    level: () => 'public', log: silentLogger(),
  });
  const [fn] = await adapter.start();
  const pid = (adapter as unknown as { gen: { transport: { pid: number } } }).gen.transport.pid;
  const a = await measure(inProcess);
  const b = await measure(fn!);
  const rss = await treeRssKiB(pid);
  await adapter.stop();
  console.log(JSON.stringify({
    calls: N, sandboxed: adapter.sandboxed,
    in_process: a, out_of_process: b,
    added_p50_ms: +(b.p50_ms - a.p50_ms).toFixed(4),
    adapter_processes_rss_mib: +(rss / 1024).toFixed(1),
  }, null, 2));
} finally {
  await rm(root, { recursive: true, force: true });
}
