/**
 * Authentication seams of the reference bridge. Config tokens implement them now; device login
 * (OAuth device grant, `src/bridge/oauth/`) implements them too.
 */

import type { AttestedRuntime } from '../protocol/messages.js';

/** Who a device access token belongs to. */
export interface DeviceIdentity {
  workspace_id: string;
  user_id: string;
  device_id: string;
}

/** Checks device access tokens (the WebSocket upgrade's bearer token, blob uploads). */
export interface DeviceAuthenticator {
  /**
   * The identity bound to the token, or null when it is missing, unknown, expired or revoked. Config tokens answer
   * at once; sign-in's tokens are looked up in the login store (a cluster's is PostgreSQL), so it may be a promise.
   */
  authenticateDevice(token: string): DeviceIdentity | null | Promise<DeviceIdentity | null>;
}

/** The first identity any of `auths` gives for `token` (each asked in order), or null. */
export function firstIdentity(auths: readonly DeviceAuthenticator[], token: string): DeviceIdentity | null | Promise<DeviceIdentity | null> {
  for (let i = 0; i < auths.length; i++) {
    const found = auths[i]!.authenticateDevice(token);
    if (found instanceof Promise) {
      return found.then((id) => id ?? firstIdentity(auths.slice(i + 1), token));
    }
    if (found) return found;
  }
  return null;
}

/** Who a runtime token belongs to: its workspace and the runtime the bridge attests in invokes (§6.1). */
export interface RuntimeScope {
  workspace_id: string;
  /** The token's configured identity (never the token or a hash of it). */
  runtime?: AttestedRuntime;
}

/** Checks runtime tokens; each is scoped to one workspace. */
export interface RuntimeAuthenticator {
  /** The workspace (and attested runtime) of the token, or null. */
  authenticateRuntime(token: string): RuntimeScope | null;
}

/** Extracts the bearer token from an Authorization header. */
export function bearer(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}
