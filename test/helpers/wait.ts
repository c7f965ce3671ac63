/** Waiting on events in tests whose code under test runs on unref'd timers. */

/** Awaits `p` while keeping the process up: the code under test unrefs its own timers, by design. */
export async function alive<T>(p: Promise<T>): Promise<T> {
  const keep = setInterval(() => undefined, 1000);
  try {
    return await p;
  } finally {
    clearInterval(keep);
  }
}
