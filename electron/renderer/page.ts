/**
 * What the tray page's screens share: the control client of the current connection, running a person's
 * action with its error shown, and the error line.
 */
import { has, t } from './catalogue.js';
import type { ControlClient, RemoteError } from './control-client.js';
import type { ControlMethod, ParamsOf, ResultOf } from './control-types.js';
import { $ } from './dom.js';

let client: ControlClient | undefined;
/** The error shown last (shown again in a new language). */
let lastError: Partial<RemoteError> | undefined;

/** Uses `c` for every call from now on (a new connection). */
export function useClient(c: ControlClient): void {
  client = c;
}

/** The current client, if connected once. */
export const currentClient = (): ControlClient | undefined => client;

/** Calls a control method on the current connection. */
export function call<M extends ControlMethod>(method: M, ...params: keyof ParamsOf<M> extends never ? [params?: ParamsOf<M>] : [params: ParamsOf<M>]): Promise<ResultOf<M>> {
  if (!client) return Promise.reject(Object.assign(new Error('Not connected to the agent.'), { type: 'disconnected' }));
  return client.call(method, ...params);
}

/** Shows `e` on the error line in the page's language (its key, else the sentence for its wire type), or clears it. */
export function showError(e: Partial<RemoteError> | undefined): void {
  const el = $('error');
  if (!e) {
    el.hidden = true;
    el.textContent = '';
    return;
  }
  el.hidden = false;
  // A wire `message` is English (PROTOCOL §2): the page shows its own sentence for the error's type.
  if (e.key) el.textContent = t(e.key);
  else if (e.type && has(`ui.error.${e.type}`)) el.textContent = t(`ui.error.${e.type}`);
  else if (e.type && has(`ui.settings.error.${e.type}`)) el.textContent = t(`ui.settings.error.${e.type}`);
  else el.textContent = t('ui.error.other', { type: e.type ?? 'error' });
  lastError = e;
}

/** Shows the last error again (after a language change). */
export function renderError(): void {
  if (lastError && !$('error').hidden) showError(lastError);
}

/** Runs a person's action; its error is shown instead of thrown. */
export async function act(fn: () => Promise<unknown>): Promise<void> {
  try {
    showError(undefined);
    await fn();
  } catch (e) {
    showError(e as RemoteError);
  }
}
