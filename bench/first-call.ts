/**
 * A handler's first call against its warm calls (issue 32: "a handler's first call, its cold import and
 * first schema compile, ≤ 50 ms more than a warm call, per handler"). One fresh agent per handler (so no
 * other handler's first call warmed what this one shares), the real bridge in this process, one function per
 * handler that needs no hardware to answer (a listing, or a state): its first call's round trip, then the
 * median of `warm` more calls of the same function. An answer that is not `completed` (no Bluetooth radio,
 * no CUPS) still counts: the handler loaded its code and checked its arguments to give it; its state is
 * printed beside the figure.
 * Run: node --import tsx bench/first-call.ts [--warm N] [--json]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { newCallId } from '../src/protocol/call-id.js';
import { METHODS, type InvokeParams, type Outcome } from '../src/protocol/messages.js';
import { BENCH_IDS, startDeviceStack } from './device-stack.js';
import { median } from './stats.js';
import { isMain, runMain } from './child.js';
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
}

/** Measures every handler of {@link FIRST_CALLS}, one fresh agent each. */
export async function measureFirstCalls(o: { warm?: number; only?: readonly FirstCallFunction[]; say?: (l: string) => void } = {}): Promise<FirstCall[]> {
  const warm = o.warm ?? 20;
  const out: FirstCall[] = [];
  for (const fn of FIRST_CALL_FUNCTIONS) {
    if (o.only && !o.only.includes(fn)) continue;
    o.say?.(`first call of ${fn} on a fresh agent, then ${warm} warm calls`);
    const share = mkdtempSync(join(tmpdir(), 'aios-first-call-share-'));
    const stack = await startDeviceStack({ synchronous: 'normal', log: 'silent', config: { grants: { files: [{ path: share, access: 'read', alias: 'bench' }] } } }, 'here');
    try {
      const conn = stack.bridge!.hub.get(BENCH_IDS.device_id);
      if (!conn) throw new Error('the agent is not connected');
      const call = async (): Promise<{ ms: number; o: Outcome }> => {
        const params: InvokeParams = { call_id: newCallId(), function: fn, arguments: ARGS[fn], ...BENCH_IDS, timeout_ms: 30_000, attempt: 1 };
        const t0 = performance.now();
        const o = await conn.peer.request<Outcome>(METHODS.invoke, params, 30_000);
        return { ms: performance.now() - t0, o };
      };
      const first = await call();
      const times: number[] = [];
      for (let i = 0; i < warm; i++) times.push((await call()).ms);
      const warmMs = median(times);
      const state = first.o.state === 'completed' ? 'completed' : `${first.o.state}/${first.o.error?.type ?? '?'}`;
      out.push({ fn, state, firstMs: first.ms, warmMs, extraMs: first.ms - warmMs });
    } finally {
      await stack.stop();
      rmSync(share, { recursive: true, force: true });
    }
  }
  return out;
}

/** The figures as a table. */
export function formatFirstCalls(rows: readonly FirstCall[]): string {
  const lines = rows.map((r) => `  ${r.fn.padEnd(20)} first ${r.firstMs.toFixed(1).padStart(7)} ms  warm ${r.warmMs.toFixed(2).padStart(6)} ms  extra ${r.extraMs.toFixed(1).padStart(7)} ms  (${r.state})`);
  return ['first call of each handler on a fresh agent, against its warm calls (median)', ...lines].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { warm: { type: 'string', default: '20' }, json: { type: 'boolean', default: false } } });
  const warm = Number(values.warm);
  if (!Number.isInteger(warm) || warm < 1) throw new Error('--warm must be a positive integer');
  const rows = await measureFirstCalls({ warm, say: (l) => process.stderr.write(l + '\n') });
  process.stdout.write((values.json ? JSON.stringify(rows, null, 2) : formatFirstCalls(rows)) + '\n');
}

if (isMain(import.meta.url)) runMain('bench:first-call', main);
