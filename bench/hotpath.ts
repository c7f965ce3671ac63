/**
 * The agent's main-thread cost per call (issue 21 item 3): bursts of no-op calls, 64 in flight, through
 * the real bridge and agent; prints the agent process's CPU µs per call (from /proc) and the bytes its
 * heap allocated per call (a v8.GCProfiler in the child, `hotpath-alloc.mjs`, started and stopped by
 * SIGUSR2 around the measured burst). Run: node --import tsx bench/hotpath.ts [calls] [-- node flags for the agent]
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openAgentRoundtrip } from './agent-roundtrip.js';

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]);
}

async function main(): Promise<void> {
  const calls = Number(process.argv[2] ?? 6000);
  const sep = process.argv.indexOf('--');
  const nodeArgs = sep >= 0 ? process.argv.slice(sep + 1) : [];
  const allocOut = join(tmpdir(), `hotpath-alloc-${process.pid}`);
  // The preload is plain JS beside this file's source (tsc does not copy it into dist/).
  const preload = join(dirname(fileURLToPath(import.meta.url).replace(/[/\\]dist([/\\]bench)/, '$1')), 'hotpath-alloc.mjs');
  const t = await openAgentRoundtrip({ synchronous: 'normal', log: 'info', nodeArgs: [...nodeArgs, '--import', preload], env: { HP_ALLOC_OUT: allocOut } });
  const pid = (t as unknown as { pid?: number }).pid ?? Number(process.env['HP_PID'] ?? 0);
  const run = async (n: number): Promise<void> => {
    let next = 0;
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (next++ < n) await t.call();
    }));
  };
  await run(1000);
  const agentPid = pid || findAgentPid();
  process.kill(agentPid, 'SIGUSR2');
  const c0 = cpuTicks(agentPid);
  const w0 = performance.now();
  await run(calls);
  const w1 = performance.now();
  const c1 = cpuTicks(agentPid);
  process.kill(agentPid, 'SIGUSR2');
  let bytes = NaN;
  for (let i = 0; i < 100 && Number.isNaN(bytes); i++) {
    await new Promise((r) => setTimeout(r, 50));
    try {
      bytes = Number(readFileSync(allocOut, 'utf8'));
    } catch {
      // not written yet
    }
  }
  rmSync(allocOut, { force: true });
  const hz = 100;
  process.stdout.write(JSON.stringify({ calls, agent_cpu_us_per_call: Math.round(((c1 - c0) / hz) * 1e6 / calls * 10) / 10, bytes_per_call: Math.round(bytes / calls), calls_per_s: Math.round(calls / ((w1 - w0) / 1000)) }) + '\n');
  await t.close();
}

function findAgentPid(): number {
  const kids = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  return kids[kids.length - 1]!;
}

main().catch((e: unknown) => {
  process.stderr.write(String(e instanceof Error ? e.stack : e) + '\n');
  process.exit(1);
});
