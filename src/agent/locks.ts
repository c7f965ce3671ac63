/**
 * Per-resource locks (PROTOCOL.md §6.6): calls on the same resource run one at a time in arrival order;
 * a wait ends early when the call's signal aborts. Also the `max_concurrent_calls` limit.
 */

interface Waiter {
  grant: () => void;
}

/**
 * What a wait can be abandoned by: an AbortSignal, or anything with the same few members (the
 * dispatcher passes a lighter one of its own for every call).
 */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Thrown when a wait is abandoned because the signal fired. */
export class LockAbortedError extends Error {
  constructor(readonly reason: unknown) {
    super('lock wait aborted');
    this.name = 'LockAbortedError';
  }
}

/** A FIFO counting semaphore whose waits can be aborted. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Waiter[] = [];
  constructor(private readonly limit: number) {}

  get inUse(): number {
    return this.active;
  }

  /** Takes a unit now if one is free and nobody is queued; undefined otherwise. */
  tryAcquire(): (() => void) | undefined {
    if (this.active >= this.limit || this.waiters.length) return undefined;
    this.active++;
    return once(() => {
      this.active--;
      this.waiters.shift()?.grant();
    });
  }

  acquire(signal?: AbortLike): Promise<() => void> {
    const release = once(() => {
      this.active--;
      this.waiters.shift()?.grant();
    });
    if (this.active < this.limit && this.waiters.length === 0) {
      this.active++;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          this.active++;
          resolve(release);
        },
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new LockAbortedError(signal?.reason));
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(w);
    });
  }
}

/** Named mutexes, created on demand and dropped when idle. */
export class LockManager {
  private readonly locks = new Map<string, Semaphore>();

  /** True when someone holds `name`. */
  isHeld(name: string): boolean {
    return (this.locks.get(name)?.inUse ?? 0) > 0;
  }

  /** Takes all `names` now if every one is free; undefined (holding nothing) otherwise. */
  tryAcquireAll(names: readonly string[]): (() => void) | undefined {
    if (!names.length) return holdsNothing;
    const sorted = [...new Set(names)].sort();
    const releases: (() => void)[] = [];
    for (const n of sorted) {
      let s = this.locks.get(n);
      if (!s) {
        s = new Semaphore(1);
        this.locks.set(n, s);
      }
      const r = s.tryAcquire();
      if (!r) {
        for (const x of releases.reverse()) x();
        this.prune(sorted);
        return undefined;
      }
      releases.push(r);
    }
    return once(() => {
      for (const r of releases.reverse()) r();
      this.prune(sorted);
    });
  }

  /**
   * Acquires all `names` (sorted, so two calls needing the same pair cannot deadlock).
   * Resolves to one release function for all of them.
   */
  async acquireAll(names: readonly string[], signal?: AbortLike): Promise<() => void> {
    const sorted = [...new Set(names)].sort();
    const releases: (() => void)[] = [];
    try {
      for (const n of sorted) {
        let s = this.locks.get(n);
        if (!s) {
          s = new Semaphore(1);
          this.locks.set(n, s);
        }
        releases.push(await s.acquire(signal));
      }
    } catch (e) {
      for (const r of releases.reverse()) r();
      this.prune(sorted);
      throw e;
    }
    return once(() => {
      for (const r of releases.reverse()) r();
      this.prune(sorted);
    });
  }

  private prune(names: string[]): void {
    for (const n of names) {
      const s = this.locks.get(n);
      if (s && s.inUse === 0) this.locks.delete(n);
    }
  }
}

/** The release of an empty set of locks (most calls take none). */
const holdsNothing = (): void => undefined;

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
