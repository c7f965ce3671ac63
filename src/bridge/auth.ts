/**
 * Authentication seams of the reference bridge. Config tokens implement them now; device login
 * (OAuth device grant, `src/bridge/oauth/`) implements them too.
 */

/** Who a device access token belongs to. */
export interface DeviceIdentity {
  workspace_id: string;
  user_id: string;
  device_id: string;
}

/** Checks device access tokens (the WebSocket upgrade's bearer token, blob uploads). */
export interface DeviceAuthenticator {
  /** The identity bound to the token, or null when it is missing, unknown, expired or revoked. */
  authenticateDevice(token: string): DeviceIdentity | null;
}

/** Checks runtime tokens; each is scoped to one workspace. */
export interface RuntimeAuthenticator {
  /** The workspace the token is scoped to, or null. */
  authenticateRuntime(token: string): { workspace_id: string } | null;
}

/** Extracts the bearer token from an Authorization header. */
export function bearer(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}
