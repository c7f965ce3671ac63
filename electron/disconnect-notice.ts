/**
 * The "offline for a while" notice. A short disconnect (sleep, Wi-Fi hand-over, a bridge restart) shows
 * nothing: the agent reconnects by itself. Only when the connection has been down for longer than
 * `delayMs` does the user get one notice, and no other until the agent has been connected again.
 * The clock is injected so the rule is tested without waiting (test/electron/disconnect-notice.test.ts).
 */

/** The timer functions the notice uses (the global ones in the app, a manual clock in tests). */
export interface NoticeClock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** How long a disconnect lasts before the user is told (60 s). */
export const DISCONNECT_NOTICE_MS = 60_000;

/** The real clock, unref'd so a pending notice never keeps the process alive. */
export const systemClock: NoticeClock = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** Watches the connection and calls `notify` once per disconnect longer than `delayMs`. */
export class DisconnectNotice {
  private timer: unknown;
  private shown = false;

  constructor(
    private readonly notify: () => void,
    private readonly clock: NoticeClock = systemClock,
    private readonly delayMs: number = DISCONNECT_NOTICE_MS,
  ) {}

  /**
   * Tells the watcher whether the user would call the device connected now. `quiet` is for down times
   * someone already explains (a fatal stop with its own notice, sign-in needed): no timer runs then.
   */
  update(connected: boolean, quiet = false): void {
    if (connected) {
      this.cancel();
      this.shown = false;
      return;
    }
    if (quiet) {
      this.cancel();
      return;
    }
    if (this.timer !== undefined || this.shown) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.shown = true;
      this.notify();
    }, this.delayMs);
  }

  /** True while a disconnect is being timed. */
  get pending(): boolean {
    return this.timer !== undefined;
  }

  /** Stops the timer (at quit). */
  dispose(): void {
    this.cancel();
  }

  private cancel(): void {
    if (this.timer === undefined) return;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
