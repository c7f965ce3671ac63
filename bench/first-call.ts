/**
 * A handler's first call against its warm calls (issue 32: "a handler's first call, its cold import and
 * first schema compile, ≤ 50 ms more than a warm call, per handler"). One fresh agent per handler (so no
 * other handler's first call warmed what this one shares), the real bridge in this process, one function per
 * handler that needs no hardware to answer (a listing, or a state): its first call's round trip, then the
 * median of `warm` more calls of the same function. An answer that is not `completed` (no Bluetooth radio,
 * no CUPS) still counts: the handler loaded its code and checked its arguments to give it; its state is
 * printed beside the figure.
 * `--profile DIR`: each agent runs with `--cpu-prof` into DIR/<function>/, and the self time of its first
 * call's span (cut from the profile by the monotonic clock both processes share) is printed by module and
 * by function.
 * `--cold-bridge`: skip the bridge's warm-up (see {@link FirstCallOptions.warmBridge}).
 * `--rounds N`: the whole measurement N times, medians printed (first calls vary a lot on a shared machine).
 * Run: node --import tsx bench/first-call.ts [--warm N] [--rounds N] [--json] [--only fn,fn] [--profile DIR] [--cold-bridge]
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { newCallId } from '../src/protocol/call-id.js';
import { METHODS, type InvokeParams, type Outcome } from '../src/protocol/messages.js';
import { BENCH_IDS, startDeviceStack } from './device-stack.js';
import { median } from './stats.js';
import { formatWindow, summarizeWindow, type WindowSummary } from './profile-window.js';
import { isMain, positiveInt, runMain } from './child.js';
import { FIRST_CALL_FUNCTIONS, type FirstCallFunction } from './targets.js';

/** The arguments of each measured function (one per built-in handler; the list is the targets table's). */
const ARGS: Record<FirstCallFunction, Record<string, unknown>> = {
  'device.info': {},
  'diagnostics.echo': { value: 'first call' },
  // The fresh agent shares one empty folder as `bench`.
  'files.list_dir': { root: 'bench', path: '.' },
  'serial.list_ports': {},
  'bluetooth.state': {},
  'printer.list': {},
  'camera.list': {},
};

/** What one handler measured. */
export interface FirstCall {
  fn: FirstCallFunction;
  /** The first call's outcome state (and error type when not completed). */
  state: string;
  firstMs: number;
  warmMs: number;
  /** firstMs − warmMs. */
  extraMs: number;
  /** With several rounds: the lowest and highest extra. */
  extraRange?: [number, number];
  /** With `profileDir`: where the agent's CPU went during the first call. */
  profile?: WindowSummary;
}

/** Options of {@link measureFirstCalls}. */
export interface FirstCallOptions {
  /** Warm calls after the first (their median is the baseline). */
  warm?: number;
  only?: readonly FirstCallFunction[];
  /** Profile each agent into this folder and summarise its first call (see the file's comment). */
  profileDir?: string;
  /**
   * Before the measured agents, one throwaway agent answers `diagnostics.echo` a few times, so that the
   * bridge's side of a call (it runs in this process) is compiled and optimised as in a bridge that has
   * served devices before; otherwise the first measured function pays the bridge's first call too.
   * Default true.
   */
  warmBridge?: boolean;
  /**
   * Rounds of the whole measurement (a fresh agent per function in each); each figure is then the median
   * over the rounds, with the extra's spread in `extraRange`. Default 1.
   */
  rounds?: number;
  say?: (l: string) => void;
}

/** Measures every handler of {@link FIRST_CALL_FUNCTIONS}, one fresh agent each. */
export async function measureFirstCalls(o: FirstCallOptions = {}): Promise<FirstCall[]> {
  const warm = o.warm ?? 20;
  const out: FirstCall[] = [];
  if (o.warmBridge ?? true) {
    o.say?.('warming the bridge side (this process) with a throwaway agent');
    await measureOne('diagnostics.echo', warm);
  }
  const rounds = o.rounds ?? 1;
  const all = new Map<FirstCallFunction, FirstCall[]>();
  for (let r = 0; r < rounds; r++) {
    for (const fn of FIRST_CALL_FUNCTIONS) {
      if (o.only && !o.only.includes(fn)) continue;
      o.say?.(`${rounds > 1 ? `round ${r + 1}/${rounds}: ` : ''}first call of ${fn} on a fresh agent, then ${warm} warm calls`);
      const row = await measureOne(fn, warm, o.profileDir ? join(o.profileDir, rounds > 1 ? `${fn}-${r + 1}` : fn) : undefined);
      all.set(fn, [...(all.get(fn) ?? []), row]);
    }
  }
  for (const [fn, rows] of all) {
    if (rows.length === 1) {
      out.push(rows[0]!);
      continue;
    }
    const extras = rows.map((x) => x.extraMs);
    out.push({ fn, state: rows[0]!.state, firstMs: median(rows.map((x) => x.firstMs)), warmMs: median(rows.map((x) => x.warmMs)), extraMs: median(extras), extraRange: [Math.min(...extras), Math.max(...extras)] });
  }
  return out;
}

/** One fresh agent: the first call of `fn`, then `warm` more. */
async function measureOne(fn: FirstCallFunction, warm: number, profDir?: string): Promise<FirstCall> {
  const share = mkdtempSync(join(tmpdir(), 'aios-first-call-share-'));
  const nodeArgs = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=100'] : [];
  const stack = await startDeviceStack({ synchronous: 'normal', log: 'silent', nodeArgs, config: { grants: { files: [{ path: share, access: 'read', alias: 'bench' }] } } }, 'here');
  let row: FirstCall;
  let span: [number, number];
  try {
    const conn = stack.bridge!.hub.get(BENCH_IDS.device_id);
    if (!conn) throw new Error('the agent is not connected');
    const call = async (): Promise<{ ms: number; o: Outcome }> => {
      const params: InvokeParams = { call_id: newCallId(), function: fn, arguments: ARGS[fn], ...BENCH_IDS, timeout_ms: 30_000, attempt: 1 };
      const t0 = performance.now();
      const o = await conn.peer.request<Outcome>(METHODS.invoke, params, 30_000);
      return { ms: performance.now() - t0, o };
    };
    const from = process.hrtime.bigint();
    const first = await call();
    span = [Number(from / 1000n), Number(process.hrtime.bigint() / 1000n)];
    const times: number[] = [];
    for (let i = 0; i < warm; i++) times.push((await call()).ms);
    const warmMs = median(times);
    const state = first.o.state === 'completed' ? 'completed' : `${first.o.state}/${first.o.error?.type ?? '?'}`;
    row = { fn, state, firstMs: first.ms, warmMs, extraMs: first.ms - warmMs };
  } finally {
    await stack.stop();
    rmSync(share, { recursive: true, force: true });
  }
  if (profDir) {
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (file) row.profile = summarizeWindow(join(profDir, file), span[0], span[1]);
  }
  return row;
}

/** The figures as a table. */
export function formatFirstCalls(rows: readonly FirstCall[]): string {
  const lines = rows.flatMap((r) => [
    `  ${r.fn.padEnd(20)} first ${r.firstMs.toFixed(1).padStart(7)} ms  warm ${r.warmMs.toFixed(2).padStart(6)} ms  extra ${r.extraMs.toFixed(1).padStart(7)} ms${r.extraRange ? ` (${r.extraRange[0].toFixed(1)}–${r.extraRange[1].toFixed(1)})` : ''}  (${r.state})`,
    ...(r.profile ? [formatWindow(r.profile)] : []),
  ]);
  const many = rows.some((r) => r.extraRange);
  return [`first call of each handler on a fresh agent, against its warm calls (median)${many ? '; medians over the rounds, the extra\'s range in brackets' : ''}`, ...lines].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { warm: { type: 'string', default: '20' }, json: { type: 'boolean', default: false }, only: { type: 'string' }, profile: { type: 'string' }, 'cold-bridge': { type: 'boolean', default: false }, rounds: { type: 'string', default: '1' } } });
  const warm = Number(values.warm);
  if (!Number.isInteger(warm) || warm < 1) throw new Error('--warm must be a positive integer');
  const only = values.only?.split(',') as FirstCallFunction[] | undefined;
  for (const f of only ?? []) if (!(FIRST_CALL_FUNCTIONS as readonly string[]).includes(f)) throw new Error(`--only: ${f} is not one of ${FIRST_CALL_FUNCTIONS.join(', ')}`);
  const rows = await measureFirstCalls({ warm, ...(only ? { only } : {}), ...(values.profile ? { profileDir: values.profile } : {}), warmBridge: !values['cold-bridge'], rounds: positiveInt(values.rounds, 'rounds'), say: (l) => process.stderr.write(l + '\n') });
  process.stdout.write((values.json ? JSON.stringify(rows, null, 2) : formatFirstCalls(rows)) + '\n');
}

if (isMain(import.meta.url)) runMain('bench:first-call', main);
