/**
 * The agent's side of the bridge's OAuth endpoints (PROTOCOL.md §10): form-encoded POSTs to
 * `/v1/oauth/device_authorization`, `/token` and `/revoke`, with errors surfaced as their RFC 6749
 * `error` codes.
 */
import type { JWK } from 'jose';
import { DEVICE_CLIENT_ID, DEVICE_CODE_GRANT } from '../protocol/oauth.js';
import { coreMessage, strings, type Message } from '../i18n/index.js';
import { SaidError } from '../i18n/said.js';

/** RFC 8628 §3.2 response. */
export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
}

/** RFC 6749 §5.1 response, plus the identity the bridge bound the tokens to. */
export interface TokenGrant {
  access_token: string;
  token_type: string;
  expires_in: number;
  refresh_token: string;
  refresh_token_expires_in?: number;
  workspace_id: string;
  user_id: string;
  device_id: string;
}

/** An OAuth error answer (`error` is the RFC code, e.g. `authorization_pending`), or `bridge_unreachable` when no answer came. */
export class OAuthClientError extends Error {
  /** The sentence as a catalogue message when it is ours (not the bridge's `error_description`), for the reader's language. */
  readonly said: Message | undefined;
  constructor(
    readonly error: string,
    message: string | Message,
    readonly status?: number,
  ) {
    super(typeof message === 'string' ? message : strings.render(message, 'en'));
    this.said = typeof message === 'string' ? undefined : message;
    this.name = 'OAuthClientError';
  }
}

/** The bridge's HTTP origin for whatever URL the user gave (`ws://h:p/v1/device`, `http://h:p`, …). */
export function bridgeHttpOrigin(url: string): string {
  if (!URL.canParse(url)) throw new SaidError(coreMessage('core.login.bad_url', { url }));
  const u = new URL(url);
  if (u.protocol === 'ws:') u.protocol = 'http:';
  else if (u.protocol === 'wss:') u.protocol = 'https:';
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new SaidError(coreMessage('core.login.bad_scheme', { scheme: u.protocol }));
  return u.origin;
}

/** The bridge's device WebSocket URL (§1) for the same input. */
export function bridgeDeviceUrl(url: string): string {
  const u = new URL(bridgeHttpOrigin(url));
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.pathname = '/v1/device';
  return u.toString();
}

/** Extra fields the device sends with its authorization request, so the approver sees what asks and the bridge can pin its key. */
export interface DeviceDescription {
  device_id: string;
  device_name: string;
  platform: string;
  client_version: string;
  public_jwk: JWK;
}

/** Calls the bridge's OAuth endpoints. */
export class OAuthClient {
  readonly origin: string;

  constructor(bridgeUrl: string) {
    this.origin = bridgeHttpOrigin(bridgeUrl);
  }

  /** RFC 8628 §3.1. */
  deviceAuthorization(device: DeviceDescription): Promise<DeviceAuthorization> {
    return this.post('/v1/oauth/device_authorization', {
      client_id: DEVICE_CLIENT_ID,
      scope: 'device',
      device_id: device.device_id,
      device_name: device.device_name,
      platform: device.platform,
      client_version: device.client_version,
      public_jwk: JSON.stringify(device.public_jwk),
    }) as Promise<DeviceAuthorization>;
  }

  /** RFC 8628 §3.4: one poll. Rejects with {@link OAuthClientError} (`authorization_pending`, `slow_down`, …). */
  pollToken(deviceCode: string): Promise<TokenGrant> {
    return this.post('/v1/oauth/token', {
      grant_type: DEVICE_CODE_GRANT,
      device_code: deviceCode,
      client_id: DEVICE_CLIENT_ID,
    }) as Promise<TokenGrant>;
  }

  /** RFC 6749 §6: rotates the refresh token. */
  refresh(refreshToken: string): Promise<TokenGrant> {
    return this.post('/v1/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: DEVICE_CLIENT_ID }) as Promise<TokenGrant>;
  }

  /** RFC 7009: revokes the token and, on this bridge, the device's whole login. */
  async revoke(token: string): Promise<void> {
    await this.post('/v1/oauth/revoke', { token, client_id: DEVICE_CLIENT_ID });
  }

  private async post(path: string, form: Record<string, string>): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(this.origin + path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams(form).toString(),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (e) {
      // fetch says only "fetch failed"; the cause's code (ECONNREFUSED, ENOTFOUND, …) is what helps.
      const cause = (e as { cause?: { code?: unknown; message?: unknown } }).cause;
      const why = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : (e as Error).message;
      throw new OAuthClientError('bridge_unreachable', coreMessage('core.login.unreachable', { origin: this.origin, why }));
    }
    const body = (await res.json().catch(() => null)) as Record<string, unknown> | null;
    if (res.ok && body) return body;
    if (res.status === 404 || res.status === 405) {
      // No OAuth route there: a bridge without `users` in its config, or not a bridge at all.
      throw new OAuthClientError('login_not_enabled', coreMessage('core.login.not_enabled', { origin: this.origin, status: res.status, path }), res.status);
    }
    const code = typeof body?.['error'] === 'string' ? body['error'] : 'bridge_error';
    const description = typeof body?.['error_description'] === 'string' ? body['error_description'] : `HTTP ${res.status}`;
    throw new OAuthClientError(code, description, res.status);
  }
}
