/**
 * The agent's main-thread cost per call (issue 21 item 3, issue 32 item 3): bursts of calls, 64 in flight,
 * through the real bridge and agent; prints the agent process's CPU µs per call (from /proc) and the bytes
 * its heap allocated per call (a v8.GCProfiler in the child, `hotpath-alloc.mjs`, started and stopped by
 * SIGUSR2 around the measured burst). The call is the no-op `diagnostics.echo`, or `device.info` (`--fn
 * device.info`: the call issue 32's "≤ 8 KB allocated per call" is stated for).
 * `--heap-prof FILE` also records the measured burst with V8's sampling heap profiler into FILE; `node
 * bench/heap-top.mjs FILE CALLS` then says which functions allocated the bytes.
 * Run: node --import tsx bench/hotpath.ts [calls] [--fn diagnostics.echo|device.info] [--heap-prof FILE] [-- node flags for the agent]
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEVICE_INFO_CALL, ECHO_CALL, openAgentRoundtrip, type RoundtripCall } from './agent-roundtrip.js';
import { until } from '../test/helpers/wait.js';
import { isMain, runMain } from './child.js';

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]);
}

/** What one hot-path run measured. */
export interface HotpathResult {
  function: string;
  calls: number;
  agent_cpu_us_per_call: number;
  bytes_per_call: number;
  calls_per_s: number;
}

/** The calls this benchmark knows by function id. */
export const HOTPATH_CALLS: Record<string, RoundtripCall> = { [ECHO_CALL.function]: ECHO_CALL, [DEVICE_INFO_CALL.function]: DEVICE_INFO_CALL };

/** One warm-up burst of 1000 calls, then `calls` measured ones, 64 in flight. */
export async function measureHotpath(o: { calls: number; call?: RoundtripCall; nodeArgs?: string[]; heapProfile?: string }): Promise<HotpathResult> {
  const c = o.call ?? ECHO_CALL;
  const allocOut = join(tmpdir(), `hotpath-alloc-${process.pid}-${Date.now()}`);
  // The preload is plain JS beside this file's source (tsc does not copy it into dist/).
  const preload = join(dirname(fileURLToPath(import.meta.url).replace(/[/\\]dist([/\\]bench)/, '$1')), 'hotpath-alloc.mjs');
  const t = await openAgentRoundtrip({ synchronous: 'normal', log: 'info', nodeArgs: [...(o.nodeArgs ?? []), '--import', preload], env: { HP_ALLOC_OUT: allocOut, ...(o.heapProfile ? { HP_HEAP_PROF: o.heapProfile } : {}) } }, c);
  try {
    const run = async (n: number): Promise<void> => {
      let next = 0;
      await Promise.all(Array.from({ length: 64 }, async () => {
        while (next++ < n) await t.call();
      }));
    };
    await run(1000);
    const agentPid = findAgentPid();
    process.kill(agentPid, 'SIGUSR2');
    const c0 = cpuTicks(agentPid);
    const w0 = performance.now();
    await run(o.calls);
    const w1 = performance.now();
    const c1 = cpuTicks(agentPid);
    process.kill(agentPid, 'SIGUSR2');
    const bytes = await until(() => {
      try {
        return Number(readFileSync(allocOut, 'utf8'));
      } catch {
        return undefined; // not written yet
      }
    }, 10_000, 'the agent wrote its allocation figure');
    const hz = 100;
    return { function: c.function, calls: o.calls, agent_cpu_us_per_call: Math.round((((c1 - c0) / hz) * 1e6) / o.calls * 10) / 10, bytes_per_call: Math.round(bytes / o.calls), calls_per_s: Math.round(o.calls / ((w1 - w0) / 1000)) };
  } finally {
    rmSync(allocOut, { force: true });
    await t.close();
  }
}

/** The agent child: the newest child of this process. */
function findAgentPid(): number {
  const kids = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  return kids[kids.length - 1]!;
}

async function main(): Promise<void> {
  const sep = process.argv.indexOf('--');
  const own = sep >= 0 ? process.argv.slice(2, sep) : process.argv.slice(2);
  const nodeArgs = sep >= 0 ? process.argv.slice(sep + 1) : [];
  const fnAt = own.indexOf('--fn');
  const fn = fnAt >= 0 ? own.splice(fnAt, 2)[1] : ECHO_CALL.function;
  const profAt = own.indexOf('--heap-prof');
  const heapProfile = profAt >= 0 ? own.splice(profAt, 2)[1] : undefined;
  const call = HOTPATH_CALLS[fn ?? ''];
  if (!call) throw new Error(`--fn must be one of ${Object.keys(HOTPATH_CALLS).join(', ')}`);
  const calls = Number(own[0] ?? 6000);
  if (!Number.isInteger(calls) || calls < 1) throw new Error('calls must be a positive integer');
  process.stdout.write(JSON.stringify(await measureHotpath({ calls, call, nodeArgs, ...(heapProfile ? { heapProfile } : {}) })) + '\n');
}

if (isMain(import.meta.url)) runMain('bench:hotpath', main);
