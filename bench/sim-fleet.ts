/**
 * Thousands of simulated devices (bench/sim-device.ts) in a few worker processes (bench/bridge-scale-worker.ts),
 * driven from the benchmark's process: each worker signs its devices' Adapter Cards, connects them with bounded
 * concurrency and keeps them connected with the agent's backoff; the driver counts who is online. Used by the
 * bridge at scale (bench/bridge-scale.ts) and the clustered bridge (bench/cluster.ts), and what process-level
 * figures they read (RSS, CPU time, open-files limits from /proc).
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { benchFile, loaderFor } from './child.js';
import { IDLE_GC_MS, SHRINK_AFTER_MS } from '../src/base/idle-gc.js';
import type { WorkerCommand, WorkerReport } from './bridge-scale-worker.js';

/** Resident set size of a process, in kB. */
export function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}

/** CPU time a process has used (user + system), in ms. */
export function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // clock ticks of 10 ms
}

/** The soft open-files limit of a process. */
export function nofile(pid: number): number | null {
  const m = /Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  return m ? Number(m[1]) : null;
}

/** Raises a process's open-files limit to `n` with prlimit (root, or within the hard limit); returns the limit it has. */
export function raiseNofile(pid: number, n: number): number | null {
  const cur = nofile(pid);
  if (cur !== null && cur >= n) return cur;
  spawnSync('prlimit', ['--pid', String(pid), `--nofile=${n}:${n}`], { stdio: 'ignore' });
  return nofile(pid);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How long a bridge must be left alone before its RSS is its memory at rest: a bridge gives back the young
 * generation a burst grew once it has been idle for a few seconds (its rest collection, src/base/idle-gc.ts).
 * Both the idle and the loaded RSS are read after this long without a hello or a request.
 */
export const BRIDGE_REST_MS = IDLE_GC_MS + SHRINK_AFTER_MS + 1500;

/** Options of {@link startFleet}. */
export interface FleetOptions {
  /** `ws://…/v1/device` of the bridge (with `urls`, the first node's). */
  url: string;
  /** Every node's device address: each device gets them all in turn, starting at its own (bench/sim-device.ts `urls`). */
  urls?: string[];
  devices: { token: string; device_id: string }[];
  workspace_id: string;
  user_id: string;
  workers: number;
  /** First connects in flight, over all workers. */
  concurrency: number;
  say: (line: string) => void;
}

/** A running fleet. */
export interface Fleet {
  workers: ChildProcess[];
  /** JSON bytes of one signed card (once the workers have signed theirs). */
  cardBytes: number;
  /** `performance.now()` when the first worker had signed its cards (and started connecting). */
  firstCardsAt: number | null;
  /** Resolves once every worker has signed its cards (connecting has started). */
  signed(): Promise<void>;
  /** Devices online with a session begun at or after `since` (a session on `notOn` counts only then), and all online by session address. */
  count(since: number, notOn?: string): Promise<{ online: number; byUrl: Record<string, number> }>;
  /**
   * Waits until every device counts (as `count`); returns when that was seen (null if `limitMs` passed first)
   * and how many counted then. Prints progress every twentieth of the devices.
   */
  waitAll(what: string, since: number, limitMs: number, notOn?: string): Promise<{ at: number | null; n: number }>;
  /** Stops the workers (their devices close without a handshake). */
  stop(): Promise<void>;
}

/** Forks the workers, each with its share of the devices; they connect as soon as their cards are signed. */
export function startFleet(o: FleetOptions): Fleet {
  const workers: ChildProcess[] = [];
  const reports = new Map<ChildProcess, WorkerReport>();
  const fleet: Fleet = {
    workers,
    cardBytes: 0,
    firstCardsAt: null,
    async signed() {
      while (workers.some((w) => !reports.has(w))) await sleep(100);
    },
    async count(since, notOn) {
      let online = 0;
      const byUrl: Record<string, number> = {};
      await Promise.all(workers.map((w) => new Promise<void>((resolve) => {
        const on = (m: WorkerReport) => {
          if (m.type !== 'count') return;
          w.off('message', on);
          online += m.online;
          for (const [u, n] of Object.entries(m.byUrl)) byUrl[u] = (byUrl[u] ?? 0) + n;
          resolve();
        };
        w.on('message', on);
        w.send({ cmd: 'count', since, ...(notOn !== undefined ? { notOn } : {}) } satisfies WorkerCommand);
      })));
      return { online, byUrl };
    },
    async waitAll(what, since, limitMs, notOn) {
      const total = o.devices.length;
      const t0 = Date.now();
      let last = -1;
      for (;;) {
        const n = (await fleet.count(since, notOn)).online;
        if (n !== last && (n - last >= total / 20 || n >= total)) {
          o.say(`${what}: ${n}/${total} online after ${Date.now() - t0} ms`);
          last = n;
        }
        if (n >= total) return { at: Date.now(), n };
        if (Date.now() - t0 > limitMs) return { at: null, n };
        await sleep(250);
      }
    },
    async stop() {
      for (const w of workers) {
        if (w.connected) w.send({ cmd: 'stop' } satisfies WorkerCommand);
      }
      await Promise.all(workers.map((w) => (w.exitCode !== null ? undefined : new Promise((r) => { const t = setTimeout(() => w.kill('SIGKILL'), 5000); w.once('exit', () => r(clearTimeout(t))); }))));
    },
  };
  const per = Math.ceil(o.devices.length / o.workers);
  const file = benchFile('bridge-scale-worker');
  for (let w = 0; w < o.workers; w++) {
    const share = o.devices.slice(w * per, (w + 1) * per);
    if (!share.length) break;
    const child = fork(file, [], { execArgv: loaderFor(file), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    raiseNofile(child.pid!, share.length + 1024);
    child.on('message', (m: WorkerReport) => {
      if (m.type === 'cards') {
        fleet.cardBytes = m.bytes;
        fleet.firstCardsAt ??= performance.now();
      } else if (m.type === 'error') o.say(`worker: ${m.message}`);
      reports.set(child, m);
    });
    workers.push(child);
    child.send({
      cmd: 'start',
      url: o.url,
      ...(o.urls ? { urls: o.urls } : {}),
      devices: share,
      workspace_id: o.workspace_id,
      user_id: o.user_id,
      concurrency: Math.ceil(o.concurrency / o.workers),
    } satisfies WorkerCommand);
  }
  return fleet;
}
