/**
 * Memory back when the agent is idle (issue 32, memory at rest). V8 grows the young generation to its
 * largest size (2 × 16 MB on 64-bit) while the agent starts (modules, config, databases) or serves a
 * burst of calls, and never shrinks it while nothing allocates: it shrinks it only in a collection that
 * runs while the allocation rate is low, and an agent at rest triggers none. Measured at 30 s after
 * start: the young generation held 33.6 MB of physical memory with under 10 MB in use, a quarter of the
 * agent's RSS (docs/performance.md, "Memory at rest").
 *
 * So once the agent has finished no call for `idleMs` and has none running, it runs a young collection,
 * then (seconds later, still idle) a second one, which V8 ends by shrinking the young generation (to 1 MB)
 * because little was allocated since the first. Then nothing more until the next call ends. Two young
 * collections, not a full one then a young one (the first design): the same memory comes back (measured
 * 89.4 MB either way), and a forced full collection made the ≈ 1 000 calls after it slower (the agent's
 * p50 / MCP's 2.6–2.7× against 1.3–1.5× with two young ones, alternated runs; docs/performance.md).
 *
 * The collections are V8's `gc({ type: 'minor' })`, exposed with `--expose-gc` set at run time (it changes
 * no collector heuristic: it only makes the function available) and read from a fresh context, when the
 * collector is made (at start-up: making that context allocates enough for V8 to see a busy process for
 * seconds and keep its young generation); where that fails (another engine), nothing is collected.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How long the agent must be idle before it collects (ms). */
export const IDLE_GC_MS = 5_000;

/** V8's `gc` (`gc({ type: 'minor' })` a young collection). */
type V8Gc = (options?: { type: 'major' | 'minor' }) => void;

let exposed: V8Gc | null | undefined;

function v8Gc(): V8Gc | null {
  if (exposed !== undefined) return exposed;
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') return (exposed = own as V8Gc);
  try {
    setFlagsFromString('--expose-gc');
    const fn = runInNewContext('gc') as unknown;
    exposed = typeof fn === 'function' ? (fn as V8Gc) : null;
  } catch {
    exposed = null;
  }
  return exposed;
}

/** The collection at rest (see above), or null when it cannot be had. */
export interface RestCollection {
  /** A young collection; V8 shrinks the young generation in it when little was allocated since the last. */
  young(): void;
}

/** V8's young collection, or null when it cannot be had (made at start-up: see above). */
export function restCollection(): RestCollection | null {
  const gc = v8Gc();
  if (!gc) return null;
  return { young: () => gc({ type: 'minor' }) };
}

/** Time between the two young collections (ms): V8 judges the allocation rate over ≈ 5 s. */
export const SHRINK_AFTER_MS = 6_000;

export interface IdleCollectorOptions {
  /** Idle time before a collection (ms). */
  idleMs?: number;
  /** True while calls are running: the collection waits for them. */
  busy: () => boolean;
  /** The collections (tests pass their own); default {@link restCollection}. */
  collect?: RestCollection;
  /** The clock (ms); default `Date.now`. */
  now?: () => number;
}

/**
 * Collects once after each busy period (start-up counts as one: the first `touch` says it is over): a
 * young collection after `idleMs` without a call, then, still idle, a second one `SHRINK_AFTER_MS` later.
 * V8 decides whether to shrink the young generation from the allocation rate since the collection
 * before: measured right after start-up or a burst it is too high (the demo's agent kept 31 MB), after
 * seconds of rest it is not. `touch` on the call path costs a clock read and a comparison: the timer is
 * armed only when none is.
 */
export class IdleCollector {
  private readonly idleMs: number;
  private readonly now: () => number;
  private last: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** What the next due time does. */
  private next: 'first' | 'second' | 'none' = 'none';
  private readonly collect: RestCollection | null;
  /** How many rest collections (both steps) ran (for tests and diagnostics). */
  collections = 0;

  constructor(private readonly o: IdleCollectorOptions) {
    this.idleMs = o.idleMs ?? IDLE_GC_MS;
    this.now = o.now ?? Date.now;
    this.collect = o.collect ?? restCollection();
    this.last = this.now();
  }

  /** Start-up is over, or something ran: collect once the agent has been idle for `idleMs` from now. */
  touch(): void {
    this.last = this.now();
    this.next = 'first';
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
    if (this.stopped || !this.collect || this.next === 'none') return;
    const wait = this.next === 'first' ? this.idleMs : SHRINK_AFTER_MS;
    const left = this.last + wait - this.now();
    if (left > 0) return this.arm(left);
    if (this.o.busy()) return this.arm(this.idleMs);
    if (this.next === 'first') {
      this.collect.young();
      this.next = 'second';
      this.last = this.now();
      return this.arm(SHRINK_AFTER_MS);
    }
    this.collect.young();
    this.next = 'none';
    this.collections++;
  }
}
