/**
 * What a person is told when the bridge session stops for good (revoked sign-in, identity mismatch,
 * outdated client…): why, and what to do. One place for the console, `/health` (so `status` and the tray
 * show it) and the desktop notice.
 */
import type { FatalStop } from './session.js';

/** How the agent got its bridge token: from `aios-device login`, or written in its config. */
export type SignInKind = 'login' | 'config';

/** Why the session stopped and what to do about it. */
export interface StopAdvice {
  type: FatalStop['type'];
  /** Why, as the session said it. */
  message: string;
  /** What to do, one sentence. */
  action: string;
}

const ACTIONS: Record<FatalStop['type'], Record<SignInKind, string>> = {
  unauthorized: {
    login: 'Sign in again with `aios-device login --bridge URL` (after `aios-device logout` if it was revoked); this agent picks up the new sign-in without a restart.',
    config: 'The bridge no longer accepts the token in this agent\'s config (bridge.token or bridge.token_file): put a valid one there and restart the agent, or sign in with `aios-device login`.',
  },
  identity_mismatch: {
    login: 'This device\'s identity does not match its sign-in: remove identity.* from the config, or sign in again with `aios-device login`, then restart the agent.',
    config: 'identity.workspace_id, identity.user_id or identity.device_id in the config does not match what the bridge knows for this token: correct them and restart the agent.',
  },
  client_outdated: {
    login: 'Install the latest AIOS Device, then start it again.',
    config: 'Install the latest AIOS Device, then start it again.',
  },
  unsupported_protocol_version: {
    login: 'The bridge speaks another protocol version: install the AIOS Device release that matches it, then start it again.',
    config: 'The bridge speaks another protocol version: install the AIOS Device release that matches it, then start it again.',
  },
  replaced: {
    login: 'Another agent connected as this same device: stop the other one (or give it its own data folder), then restart this agent.',
    config: 'Another agent connected with this device id: give each agent its own identity.device_id, then restart this agent.',
  },
};

/** The advice for a fatal stop. */
export function stopAdvice(f: FatalStop, kind: SignInKind): StopAdvice {
  return { type: f.type, message: f.message, action: ACTIONS[f.type][kind] };
}

/** The console lines for a fatal stop. */
export function stopAdviceText(a: StopAdvice): string {
  return `agent stopped connecting to the bridge (${a.type}): ${a.message}\n  what to do: ${a.action}\n`;
}

/** The console line when a new sign-in was picked up. */
export const SIGNED_IN_AGAIN = 'new sign-in picked up: reconnecting to the bridge\n';

/** The console line when a new sign-in is for another identity than the running agent's. */
export function signedInElsewhere(who: string): string {
  return `a new sign-in was stored for ${who}, not this agent's identity: restart the agent to use it\n`;
}
