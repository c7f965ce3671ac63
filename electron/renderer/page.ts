/**
 * What the tray page's screens share: the typed control client over the current connection, running a person's
 * action with its error shown, and the error line.
 */
import { agentLocale, has, setAgentTable, t } from './catalogue.js';
import { controlClient } from '../../src/control/client.js';
import type { RemoteError, Transport } from './control-client.js';
import { $ } from './dom.js';

let transport: Transport | undefined;
/** The error shown last (shown again in a new language). */
let lastError: Partial<RemoteError> | undefined;

/** Uses `t` for every call from now on (a new connection). */
export function useTransport(t: Transport): void {
  transport = t;
}

/** The current transport, if connected once. */
export const currentTransport = (): Transport | undefined => transport;

/**
 * The control API on the current connection: one function per method of its table
 * (`control.listGrants()`, src/control/api.ts), typed by it.
 */
export const control = controlClient((method, params) => {
  if (!transport) return Promise.reject(Object.assign(new Error('Not connected to the agent.'), { type: 'disconnected' }));
  return transport.call(method, params);
});

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

/**
 * Loads the agent's sentences (function titles, levels, prompt sentences sent as keys) in the page's
 * language; an agent without control.catalogue.get leaves them in the words it sends.
 */
export async function loadAgentWords(): Promise<void> {
  if (!transport) return;
  try {
    setAgentTable((await control.i18nCatalogue({ locale: agentLocale() })).messages);
  } catch {
    setAgentTable({});
  }
}

const watchers: (() => void)[] = [];
/** Calls `fn` after each change a summary shows (the pills, the sign-in, the prompts): Home's. */
export function onChange(fn: () => void): void {
  watchers.push(fn);
}
/** Tells the summaries that something they show changed. */
export function changed(): void {
  for (const w of watchers) w();
}
