/**
 * Node's timers hold a signed 32-bit count of milliseconds: a longer delay (2^31 ms, about 24.8 days, or
 * more) does not wait at all, it fires after 1 ms with a TimeoutOverflowWarning. A delay that comes from
 * outside (a device's `timeout_ms_default`, a call's deadline) goes through `clampTimerMs` before it
 * reaches `setTimeout`.
 */

/** The longest delay a Node timer keeps: 2^31 − 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A delay a Node timer keeps: at least 0, at most `MAX_TIMER_MS`; NaN counts as 0. */
export function clampTimerMs(ms: number): number {
  if (Number.isNaN(ms) || ms <= 0) return 0;
  return Math.min(ms, MAX_TIMER_MS);
}

/** `setTimeout` with the delay clamped (see `clampTimerMs`). */
export function setClampedTimeout(fn: () => void, ms: number): NodeJS.Timeout {
  return setTimeout(fn, clampTimerMs(ms));
}
