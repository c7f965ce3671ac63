/**
 * The tests' one way to wait: on a condition (polled) or on a promise whose code under test runs on unref'd
 * timers. A wait costs time only when it fails, so its limit is generous and scaled on a busy machine.
 */

/**
 * How much longer than asked a wait may take before it fails. On a busy machine (CI beside other work,
 * `AIOS_TEST_SLACK` raises it further) a slow peer is not a failure.
 */
export const SLACK = Math.max(1, Number(process.env['AIOS_TEST_SLACK'] ?? 3) || 3);

/**
 * Polls `fn` until it returns a truthy value, and returns that value; fails after `ms` (times the slack) saying
 * what it waited for (`what` may be a function, called only then, to describe the state seen). The deadline reads
 * the monotonic clock, so a test that mocks `Date` can still wait.
 */
export async function until<T>(fn: () => T | Promise<T>, ms = 10_000, what: string | (() => string) = 'condition', every = 10): Promise<NonNullable<T>> {
  const end = performance.now() + ms * SLACK;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (performance.now() > end) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

/** Awaits `p` while keeping the process up: the code under test unrefs its own timers, by design. */
export async function alive<T>(p: Promise<T>): Promise<T> {
  const keep = setInterval(() => undefined, 1000);
  try {
    return await p;
  } finally {
    clearInterval(keep);
  }
}

/**
 * A test's own time limit, scaled by the slack like every wait: a limit is there to end a hang, and on a busy
 * machine a slow test is not a hung one.
 */
export function slow(ms: number): number {
  return ms * SLACK;
}
