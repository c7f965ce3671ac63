/**
 * Memory back when the agent is idle (issue 32, memory at rest). V8 grows the young generation to its
 * largest size (2 × 16 MB on 64-bit) while the agent starts (modules, config, databases) or serves a
 * burst of calls, and never shrinks it while nothing allocates: it shrinks it only in a collection that
 * runs while the allocation rate is low, and an agent at rest triggers none. Measured at 30 s after
 * start: the young generation held 33.6 MB of physical memory with under 10 MB in use, a quarter of the
 * agent's RSS (docs/performance.md, "Memory at rest").
 *
 * So once the agent has finished no call for `idleMs` and has none running, it runs one full
 * collection: the young generation shrinks to 1 MB and the old generation gives back what start-up or
 * the burst left. Then nothing more until the next call ends. The collection runs at a time nothing
 * waits for (a call arriving during it waits the collection out: ≈ 10–30 ms once).
 *
 * The collection is V8's `gc()`, exposed with `--expose-gc` set at run time (it changes no collector
 * heuristic: it only makes the function available) and read from a fresh context; where that fails
 * (another engine), nothing is collected.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How long the agent must be idle before it collects (ms). */
export const IDLE_GC_MS = 10_000;

let exposed: (() => void) | null | undefined;

/** V8's full collection, or null when it cannot be had. */
export function fullCollection(): (() => void) | null {
  if (exposed !== undefined) return exposed;
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') return (exposed = own as () => void);
  try {
    setFlagsFromString('--expose-gc');
    const fn = runInNewContext('gc') as unknown;
    exposed = typeof fn === 'function' ? (fn as () => void) : null;
  } catch {
    exposed = null;
  }
  return exposed;
}

export interface IdleCollectorOptions {
  /** Idle time before a collection (ms). */
  idleMs?: number;
  /** True while calls are running: the collection waits for them. */
  busy: () => boolean;
  /** The collection (tests pass their own); default V8's full collection. */
  collect?: () => void;
  /** The clock (ms); default `Date.now`. */
  now?: () => number;
}

/**
 * Collects once after each busy period (start-up counts as one: the first `touch` says it is over).
 * `touch` on the call path costs a clock read and a comparison: the timer is armed only when none is.
 */
export class IdleCollector {
  private readonly idleMs: number;
  private readonly now: () => number;
  private last: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** How many collections ran (for tests and diagnostics). */
  collections = 0;

  constructor(private readonly o: IdleCollectorOptions) {
    this.idleMs = o.idleMs ?? IDLE_GC_MS;
    this.now = o.now ?? Date.now;
    this.last = this.now();
  }

  /** Start-up is over, or something ran: collect once the agent has been idle for `idleMs` from now. */
  touch(): void {
    this.last = this.now();
    if (!this.timer && !this.stopped) this.arm(this.idleMs);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.due(), ms);
    this.timer.unref();
  }

  private due(): void {
    this.timer = undefined;
    if (this.stopped) return;
    const left = this.last + this.idleMs - this.now();
    if (left > 0) return this.arm(left);
    if (this.o.busy()) return this.arm(this.idleMs);
    const collect = this.o.collect ?? fullCollection();
    if (!collect) return;
    collect();
    this.collections++;
  }
}
