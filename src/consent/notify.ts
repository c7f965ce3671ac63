/**
 * A desktop notification saying a confirmation prompt is waiting. node-notifier is loaded on first use;
 * when it is missing or the desktop has no notification service, the failure is logged at debug level
 * and ignored: the prompt itself still waits in the UI.
 */
import type { Logger } from '../sdk/index.js';
import type { PromptView } from './prompt.js';

type NotifyFn = (opts: { title: string; message: string; wait?: boolean }, cb?: (err: Error | null) => void) => void;
let loaded: Promise<NotifyFn | undefined> | undefined;

async function load(log?: Logger): Promise<NotifyFn | undefined> {
  try {
    const mod = (await import('node-notifier')) as unknown as { default?: { notify: NotifyFn }; notify?: NotifyFn };
    const n = mod.default ?? (mod as { notify: NotifyFn });
    return n.notify.bind(n);
  } catch (e) {
    log?.debug({ err: (e as Error).message }, 'desktop notifications unavailable');
    return undefined;
  }
}

/** Tells the user a prompt is waiting (no argument values, only who asks and the function name). */
export function notifyPromptWaiting(view: PromptView, log?: Logger): void {
  loaded ??= load(log);
  void loaded.then((notify) => {
    if (!notify) return;
    const who = view.requester?.name ?? view.requester?.kind ?? 'A requester';
    try {
      notify({ title: 'AIOS Device: confirmation needed', message: `${who} asks to: ${view.function_name}` }, (err) => {
        if (err) log?.debug({ err: err.message }, 'desktop notification failed');
      });
    } catch (e) {
      log?.debug({ err: (e as Error).message }, 'desktop notification failed');
    }
  });
}
