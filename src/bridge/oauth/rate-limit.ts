/**
 * Counts failed attempts per key (a client address, a page session, a user name) in a fixed window,
 * so that guessing user codes or passwords on the approval page stops after a few tries.
 */

/**
 * Failure counters with a lockout window, per key: one process's {@link AttemptLimiter}, or a cluster's in
 * PostgreSQL (`store/pg-rate-limits.ts`), where every node counts against one budget.
 */
export interface AttemptLimits {
  /** True when `key` has used up its attempts for the current window. */
  blocked(key: string): boolean | Promise<boolean>;
  /** Records one failed attempt. */
  fail(key: string): void | Promise<void>;
  /** Milliseconds until `key` may try again (0 when not blocked). */
  retryAfterMs(key: string): number | Promise<number>;
}

/** A failure counter with a lockout window. In memory: a bridge restart forgets it, which only helps a guesser by one window. */
export class AttemptLimiter implements AttemptLimits {
  private readonly failures = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** True when `key` has used up its attempts for the current window. */
  blocked(key: string): boolean {
    const e = this.failures.get(key);
    if (!e) return false;
    if (this.now() >= e.resetAt) {
      this.failures.delete(key);
      return false;
    }
    return e.count >= this.max;
  }

  /** Records one failed attempt. */
  fail(key: string): void {
    const now = this.now();
    const e = this.failures.get(key);
    if (!e || now >= e.resetAt) this.failures.set(key, { count: 1, resetAt: now + this.windowMs });
    else e.count += 1;
    if (this.failures.size > 10_000) this.sweep(now);
  }

  /** Milliseconds until `key` may try again (0 when not blocked). */
  retryAfterMs(key: string): number {
    const e = this.failures.get(key);
    return e && e.count >= this.max ? Math.max(0, e.resetAt - this.now()) : 0;
  }

  private sweep(now: number): void {
    for (const [k, e] of this.failures) if (now >= e.resetAt) this.failures.delete(k);
  }
}
