/**
 * What a person is told when the bridge session stops for good (revoked sign-in, identity mismatch,
 * outdated client…): why, and what to do. One place for the console, `/health` (so `status` and the tray
 * show it) and the desktop notice. The advice fits where it is read: the console's (`core.stop.*`) names
 * `aios-device login`; the window renders `action_key` `core.stop.X` as its own `ui.stop.X`
 * (electron/renderer/*.json), which points to its Sign in; the desktop notice names both.
 */
import type { FatalStop } from './session.js';
import { coreMessage, strings, type CoreKey, type Locale } from '../i18n/index.js';

/** How the agent got its bridge token: from `aios-device login`, or written in its config. */
export type SignInKind = 'login' | 'config';

/** Why the session stopped and what to do about it. */
export interface StopAdvice {
  type: FatalStop['type'];
  /** Why, as the session said it. */
  message: string;
  /** What to do, one sentence (English). */
  action: string;
  /** The catalogue key of `action`, for screens that show it in the user's language. */
  action_key?: string;
}

/** The catalogue key of the advice for each stop, by how the agent got its token. */
export const STOP_ACTION_KEYS: Record<FatalStop['type'], Record<SignInKind, CoreKey>> = {
  unauthorized: { login: 'core.stop.unauthorized.login', config: 'core.stop.unauthorized.config' },
  identity_mismatch: { login: 'core.stop.identity_mismatch.login', config: 'core.stop.identity_mismatch.config' },
  client_outdated: { login: 'core.stop.client_outdated', config: 'core.stop.client_outdated' },
  unsupported_protocol_version: { login: 'core.stop.unsupported_protocol_version', config: 'core.stop.unsupported_protocol_version' },
  replaced: { login: 'core.stop.replaced.login', config: 'core.stop.replaced.config' },
};

/** The advice for a fatal stop (`action` in English: it travels in `/health`; screens render `action_key`). */
export function stopAdvice(f: FatalStop, kind: SignInKind): StopAdvice {
  const key = STOP_ACTION_KEYS[f.type][kind];
  return { type: f.type, message: f.message, action: strings.render(coreMessage(key), 'en'), action_key: key };
}

/** What to do, in `locale`. */
export function stopAction(a: StopAdvice, locale: Locale = 'en'): string {
  return a.action_key && strings.has(a.action_key) ? strings.render(coreMessage(a.action_key as CoreKey), locale) : a.action;
}

/** The desktop notice's advice where it differs from the console's: read at the desktop, where the window's Sign in is at hand. */
const NOTICE_KEYS: Partial<Record<string, CoreKey>> = { 'core.stop.unauthorized.login': 'core.notice.signed_out_body' };

/** What to do, for the desktop notice, in `locale`. */
export function stopNoticeAction(a: StopAdvice, locale: Locale = 'en'): string {
  const key = a.action_key ? NOTICE_KEYS[a.action_key] : undefined;
  return key ? strings.render(coreMessage(key), locale) : stopAction(a, locale);
}

/** The console lines for a fatal stop. */
export function stopAdviceText(a: StopAdvice, locale: Locale = 'en'): string {
  return strings.render(coreMessage('core.stop.text', { type: a.type, message: a.message, action: stopAction(a, locale) }), locale) + '\n';
}

/** The console line when a new sign-in was picked up. */
export const SIGNED_IN_AGAIN = 'new sign-in picked up: reconnecting to the bridge\n';

/** The console line when a new sign-in is for another identity than the running agent's. */
export function signedInElsewhere(who: string): string {
  return `a new sign-in was stored for ${who}, not this agent's identity: restart the agent to use it\n`;
}
