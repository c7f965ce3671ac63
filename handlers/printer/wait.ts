/**
 * The printer engine's one pause (job polling, retry back-off): it ends at once, with the signal's own
 * reason, when the call is cancelled or times out. Kept here because the engine does not import the SDK.
 */

/** Resolves after `ms`, or rejects with the signal's reason as soon as it fires. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  // A signal that has fired already fires no event: end now rather than after the whole pause.
  if (signal.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
  return new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason ?? new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
