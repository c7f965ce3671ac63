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
 *
 * A third, optional step is for the bridge (issue 34, memory per device): a storm of hellos fills the old
 * generation with the hellos' garbage between the long-lived session objects, and V8 keeps those pages,
 * partly empty, for good (3 000 devices: 82 MB of old-generation pages holding 44 MB). A full collection
 * alone does not give them back: it moves objects off a page only when V8 judges the page worth it. So when
 * the old generation holds `compactAboveBytes` more pages than at the last rest, the collector runs one full
 * collection that compacts every page (V8's `--compact-on-every-full-gc`, set for that one collection and
 * cleared after it). Node 20's `gc({ type: 'major' })` is a young collection (its V8 reads no options): a
 * full one is `gc()` with no argument. The agent does not use this step: its old generation holds no such
 * garbage at rest (11.0 MB of pages for 10.5 MB used), and a full collection slowed its next ≈ 1 000 calls.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How long the agent must be idle before it collects (ms). */
export const IDLE_GC_MS = 5_000;

/** V8's `gc`: `gc({ type: 'minor' })` a young collection, `gc()` a full one. */
type V8Gc = (options?: { type: 'minor' }) => void;

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
  /** A full collection that compacts every page of the old generation (see above). */
  compact?(): void;
  /** Bytes of pages the old generation holds (physical). */
  oldBytes?(): number;
}

/** Bytes of pages V8's old generation holds (physical). */
export function oldSpaceBytes(): number {
  return getHeapSpaceStatistics().find((sp) => sp.space_name === 'old_space')?.physical_space_size ?? 0;
}

/** V8's collections, or null when they cannot be had (made at start-up: see above). */
export function restCollection(): RestCollection | null {
  const gc = v8Gc();
  if (!gc) return null;
  return {
    young: () => gc({ type: 'minor' }),
    compact: () => {
      try {
        setFlagsFromString('--compact-on-every-full-gc');
      } catch {
        // An engine that refuses flags after start-up: a plain full collection, which compacts the worst pages.
        return gc();
      }
      try {
        gc();
      } finally {
        setFlagsFromString('--no-compact-on-every-full-gc');
      }
    },
    oldBytes: oldSpaceBytes,
  };
}

/**
 * The bridge's `compactAboveBytes`: 8 MiB of old-generation pages grown since the last rest (≈ 300 devices'
 * hellos); a compacting collection of a bridge with 3 000 devices pauses it for tens of milliseconds, at rest.
 */
export const BRIDGE_COMPACT_ABOVE_BYTES = 8 * 1024 * 1024;

/**
 * The bridge's rest collection (the single process and every cluster node): the two young collections, and the
 * compaction after a storm of hellos, each compaction logged with its pages and pause.
 */
export function bridgeIdleCollector(info: (fields: object, msg: string) => void): IdleCollector {
  return new IdleCollector({
    busy: () => false,
    compactAboveBytes: BRIDGE_COMPACT_ABOVE_BYTES,
    onCompact: (c) => info(c, 'rest compaction: the old generation after a storm of hellos'),
  });
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
  /**
   * After the two young collections, compact the old generation when it holds this many bytes of pages more
   * than after the last rest (or start-up); default never (the agent). The bridge sets it (see above).
   */
  compactAboveBytes?: number;
  /** Told after each compacting collection: the old generation's pages before and after, and how long it paused. */
  onCompact?: (info: { before_bytes: number; after_bytes: number; pause_ms: number }) => void;
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
  /** How many compacting collections ran (for tests and diagnostics). */
  compactions = 0;
  /** The old generation's pages after the last rest (bytes), when compaction is on. */
  private oldAtRest: number | undefined;

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
    this.compactIfGrown();
  }

  private compactIfGrown(): void {
    const { compact, oldBytes } = this.collect ?? {};
    if (this.o.compactAboveBytes === undefined || !compact || !oldBytes) return;
    const before = oldBytes();
    if (this.oldAtRest === undefined || before - this.oldAtRest >= this.o.compactAboveBytes) {
      // The first rest (start-up's) sets the mark without compacting: start-up leaves no storm's garbage.
      if (this.oldAtRest !== undefined) {
        const t0 = performance.now();
        compact();
        this.compactions++;
        this.o.onCompact?.({ before_bytes: before, after_bytes: oldBytes(), pause_ms: Math.round(performance.now() - t0) });
      }
      this.oldAtRest = oldBytes();
    } else if (before < this.oldAtRest) this.oldAtRest = before;
  }
}
