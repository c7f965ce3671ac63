/**
 * One token bucket: `perSecond` tokens flow in, at most `burst` are held, each allowed event takes one. The
 * bridge's one rate rule: the runtime API's per-token limit (RateLimiter) and a device's `tools_changed` rate
 * (device-limits.ts) both take from one of these.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    now = Date.now(),
  ) {
    this.tokens = burst;
    this.at = now;
  }

  /** Takes one token; returns 0 when allowed, else the milliseconds until one is available. */
  take(now = Date.now()): number {
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.at) / 1000) * this.perSecond);
    this.at = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) / this.perSecond) * 1000);
  }
}
