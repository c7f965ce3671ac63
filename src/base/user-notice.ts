/**
 * Desktop notices from the agent itself (not from a call): e.g. "update required" when the bridge
 * refuses this client version. node-notifier is loaded lazily; without a notification service the notice
 * is only logged.
 */
import type { Logger } from './logger.js';

type Notifier = { notify(o: Record<string, unknown>, cb?: (err: Error | null) => void): void };

/** Shows a notice to the person at the machine; never throws. */
export async function showNotice(title: string, message: string, log: Logger): Promise<void> {
  try {
    const mod = (await import('node-notifier')) as unknown as { default: Notifier };
    await new Promise<void>((resolve) => mod.default.notify({ title, message, appName: 'AIOS Device', wait: false }, () => resolve()));
  } catch (e) {
    log.debug({ err: String(e) }, 'no desktop notification service; the notice is in the log only');
  }
}
