/**
 * The OAuth 2.0 device authorization grant (RFC 8628) and the refresh/revocation rules of the
 * reference bridge, independent of HTTP: device codes, polling with cumulative `slow_down`, approval
 * into a workspace with the device key pinned, short-lived access tokens and rotating refresh tokens.
 */
import { randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { DeviceIdentity } from '../auth.js';
import { hashToken, newToken, newUserCode, normaliseUserCode } from './tokens.js';
import type { DeviceCodeRow, DeviceRow } from './oauth-store.js';
import type { LoginStore } from './login-store.js';
import { DEVICE_CLIENT_ID } from '../../protocol/oauth.js';

/** RFC 6749 §5.2 / RFC 8628 §3.5 error codes this module produces. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unsupported_grant_type'
  | 'authorization_pending'
  | 'slow_down'
  | 'access_denied'
  | 'expired_token';

/** An OAuth error response (`{ error, error_description }`), with the HTTP status it goes out with. */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    description: string,
    readonly status: number = error === 'invalid_client' ? 401 : 400,
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}

/** Why an approval could not be recorded; shown to the signed-in user. */
export class ApprovalError extends Error {
  /**
   * @param message English, for logs and machines.
   * @param reason The bridge catalogue's key of the sentence the approval page shows (`bridge.error.<reason>`).
   */
  constructor(
    message: string,
    readonly reason: 'unknown_code' | 'not_member' | 'provisioned' | 'other_user' | 'key_mismatch' | 'decided' | 'choose',
    readonly params: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApprovalError';
  }
}

/** Lifetimes and polling parameters. */
export interface DeviceFlowOptions {
  /** Access token lifetime; short, because a stolen one works until it expires. Default 600. */
  accessTokenTtlS?: number;
  /** Refresh token lifetime, renewed at each rotation. Default 30 days. */
  refreshTokenTtlS?: number;
  /** How long a device code may wait for approval. Default 600. */
  deviceCodeTtlS?: number;
  /** Minimum polling interval handed to clients. Default 5 (RFC 8628 §3.2). */
  intervalS?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  clock?: () => number;
  /** Device ids no one may register by login: the bridge config's `device_tokens` devices. */
  reservedDeviceIds?: Iterable<string>;
  /** Told when an approval moves a live registration to another workspace: that old identity's session must end. */
  onSuperseded?: (old: DeviceIdentity) => void;
}

/** What the device sends with its authorization request (RFC 8628 §3.1 plus this bridge's extension parameters). */
export interface AuthorizationRequest {
  client_id: string;
  scope?: string | undefined;
  device_id: string;
  device_name: string;
  platform: string;
  client_version: string;
  public_jwk: unknown;
}

/** RFC 8628 §3.2 response, without the URIs (the HTTP layer adds them). */
export interface AuthorizationGrant {
  device_code: string;
  user_code: string;
  expires_in: number;
  interval: number;
}

/** RFC 6749 §5.1 token response, plus the identity the tokens are bound to. */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  refresh_token_expires_in: number;
  scope: string;
  workspace_id: string;
  user_id: string;
  device_id: string;
}

const DEVICE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
// A client that polls a little early because of network jitter is not misbehaving.
const POLL_TOLERANCE_MS = 250;

function cleanText(s: unknown, max: number): string | null {
  if (typeof s !== 'string') return null;
  // eslint-disable-next-line no-control-regex
  const t = s.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return t.length > 0 && t.length <= max ? t : null;
}

/** Accepts only a public P-256 key; a JWK carrying `d` would mean the device leaked its private key to us. */
function publicEcJwk(jwk: unknown): JWK | null {
  if (!jwk || typeof jwk !== 'object') return null;
  const k = jwk as Record<string, unknown>;
  if (k['kty'] !== 'EC' || k['crv'] !== 'P-256' || typeof k['x'] !== 'string' || typeof k['y'] !== 'string') return null;
  if ('d' in k) return null;
  const out: JWK = { kty: 'EC', crv: 'P-256', x: k['x'], y: k['y'], alg: 'ES256', use: 'sig' };
  return out;
}

/** The device authorization grant and token lifecycle over a {@link LoginStore} (SQLite, or a cluster's PostgreSQL). */
export class DeviceFlow {
  readonly accessTokenTtlS: number;
  readonly refreshTokenTtlS: number;
  readonly deviceCodeTtlS: number;
  readonly intervalS: number;
  private readonly now: () => number;
  private readonly reserved: ReadonlySet<string>;
  private readonly onSuperseded: (old: DeviceIdentity) => void;

  constructor(readonly store: LoginStore, opts: DeviceFlowOptions = {}) {
    this.onSuperseded = opts.onSuperseded ?? (() => undefined);
    this.reserved = new Set(opts.reservedDeviceIds ?? []);
    this.accessTokenTtlS = opts.accessTokenTtlS ?? 600;
    this.refreshTokenTtlS = opts.refreshTokenTtlS ?? 30 * 86_400;
    this.deviceCodeTtlS = opts.deviceCodeTtlS ?? 600;
    this.intervalS = opts.intervalS ?? 5;
    this.now = opts.clock ?? Date.now;
  }

  /** RFC 8628 §3.1–3.2: registers a request and returns the codes. */
  async authorize(req: AuthorizationRequest): Promise<AuthorizationGrant> {
    if (req.client_id !== DEVICE_CLIENT_ID) throw new OAuthError('invalid_client', 'Unknown client_id.');
    if (typeof req.device_id !== 'string' || !DEVICE_ID.test(req.device_id)) throw new OAuthError('invalid_request', 'device_id is missing or malformed.');
    const name = cleanText(req.device_name, 100);
    const platform = cleanText(req.platform, 40);
    const version = cleanText(req.client_version, 40);
    if (!name || !platform || !version) throw new OAuthError('invalid_request', 'device_name, platform and client_version are required.');
    const jwk = publicEcJwk(typeof req.public_jwk === 'string' ? safeJson(req.public_jwk) : req.public_jwk);
    if (!jwk) throw new OAuthError('invalid_request', 'public_jwk must be a public EC P-256 key.');
    const thumbprint = await calculateJwkThumbprint(jwk, 'sha256');
    // Refused before any code exists: a device id provisioned by the administrator, or registered with
    // another key, cannot be claimed by whoever guesses it (only its own key may sign in again).
    const taken = await this.claimProblem(req.device_id, thumbprint);
    if (taken) throw new OAuthError('invalid_request', taken);
    const now = this.now();
    await this.store.pruneDeviceCodes(now);
    const deviceCode = newToken('device_code');
    for (let attempt = 0; ; attempt++) {
      const row: DeviceCodeRow = {
        device_code_hash: hashToken(deviceCode),
        user_code: newUserCode(),
        client_id: req.client_id,
        device_id: req.device_id,
        device_name: name,
        platform,
        client_version: version,
        public_jwk: JSON.stringify(jwk),
        jwk_thumbprint: thumbprint,
        scope: req.scope ?? null,
        status: 'pending',
        interval_s: this.intervalS,
        last_poll_at: null,
        expires_at: now + this.deviceCodeTtlS * 1000,
        created_at: now,
        user_id: null,
        workspace_id: null,
      };
      if (await this.store.insertDeviceCode(row)) {
        return { device_code: deviceCode, user_code: row.user_code, expires_in: this.deviceCodeTtlS, interval: this.intervalS };
      }
      // A user code collision is possible (34 bits); repeated collisions are a real fault.
      if (attempt >= 4) throw new Error('no free user code after 5 attempts');
    }
  }

  /** RFC 8628 §3.4–3.5: one poll of the token endpoint with a device code. */
  async pollDeviceCode(deviceCode: string, clientId: string): Promise<TokenResponse> {
    if (clientId !== DEVICE_CLIENT_ID) throw new OAuthError('invalid_client', 'Unknown client_id.');
    const hash = hashToken(deviceCode);
    const row = await this.store.deviceCodeByHash(hash);
    if (!row || row.client_id !== clientId) throw new OAuthError('invalid_grant', 'Unknown device_code.');
    const now = this.now();
    if (row.status === 'consumed') throw new OAuthError('invalid_grant', 'This device_code was already exchanged for tokens.');
    if (now >= row.expires_at) throw new OAuthError('expired_token', 'The device code expired before it was approved.');
    if (row.status === 'denied') throw new OAuthError('access_denied', 'The request was denied.');
    if (row.status === 'pending') {
      const early = row.last_poll_at !== null && now - row.last_poll_at < row.interval_s * 1000 - POLL_TOLERANCE_MS;
      // §3.5: each slow_down adds 5 s to the interval for the rest of this grant.
      const interval = early ? row.interval_s + 5 : row.interval_s;
      await this.store.notePoll(hash, now, interval);
      if (early) throw new OAuthError('slow_down', `Polling too fast; wait at least ${interval} s between requests.`);
      throw new OAuthError('authorization_pending', 'The user has not approved the request yet.');
    }
    // Approved: exactly one poll wins the tokens.
    if (!(await this.store.consumeDeviceCode(hash))) throw new OAuthError('invalid_grant', 'This device_code was already exchanged for tokens.');
    const device = await this.store.device(row.device_id);
    if (!device || device.revoked_at !== null || !(await this.store.isMember(device.user_id, device.workspace_id))) {
      throw new OAuthError('invalid_grant', 'The device registration is no longer valid.');
    }
    // One login per device: an earlier login's tokens stop working when the new one starts.
    await this.store.revokeDeviceTokens(device.id, now);
    return this.issue(device, randomUUID(), row.scope ?? 'device');
  }

  /** RFC 6749 §6 with rotation: the presented refresh token is spent; presenting a spent one revokes the whole chain. */
  async refresh(refreshToken: string, clientId: string): Promise<TokenResponse> {
    if (clientId !== DEVICE_CLIENT_ID) throw new OAuthError('invalid_client', 'Unknown client_id.');
    const hash = hashToken(refreshToken);
    const row = await this.store.token(hash);
    const now = this.now();
    if (!row || row.kind !== 'refresh') throw new OAuthError('invalid_grant', 'Unknown refresh token.');
    if (row.revoked_at !== null) throw new OAuthError('invalid_grant', 'The refresh token was revoked; sign in again.');
    if (now >= row.expires_at) throw new OAuthError('invalid_grant', 'The refresh token expired; sign in again.');
    if (row.used_at !== null || !(await this.store.markTokenUsed(hash, now))) {
      // OAuth 2.0 Security BCP §4.14: reuse of a rotated token means it was copied; end that login everywhere.
      await this.store.revokeFamily(row.family_id, now);
      throw new OAuthError('invalid_grant', 'The refresh token was already used; sign in again.');
    }
    const device = await this.store.device(row.device_id);
    if (!device || device.revoked_at !== null || !(await this.store.isMember(device.user_id, device.workspace_id))) {
      await this.store.revokeFamily(row.family_id, now);
      throw new OAuthError('invalid_grant', 'The device registration is no longer valid; sign in again.');
    }
    return this.issue(device, row.family_id, 'device');
  }

  /** RFC 7009: revokes every token of the device the given token belongs to; returns that device's identity, or null for an unknown token. */
  async revokeToken(token: string): Promise<DeviceIdentity | null> {
    const row = await this.store.token(hashToken(token));
    if (!row) return null;
    await this.store.revokeDeviceTokens(row.device_id, this.now());
    const d = await this.store.device(row.device_id);
    return d ? { workspace_id: d.workspace_id, user_id: d.user_id, device_id: d.id } : null;
  }

  /**
   * Why this device id cannot be registered with this key, or null. Reserved ids (config
   * `device_tokens`) are never available; a live registration is available only to its own key
   * (the approval then also checks that the user is the same).
   */
  async claimProblem(deviceId: string, thumbprint: string): Promise<string | null> {
    if (this.reserved.has(deviceId)) return `The device id "${deviceId}" is provisioned on this bridge and cannot be registered by sign-in; choose another device id.`;
    const existing = await this.store.device(deviceId);
    if (existing && existing.revoked_at === null && existing.jwk_thumbprint !== thumbprint) {
      return `The device id "${deviceId}" is registered to another device; its owner must revoke it first, or choose another device id.`;
    }
    return null;
  }

  /** Revokes a device (administrator or owner action): its tokens stop working and it must be approved again. */
  async revokeDevice(deviceId: string): Promise<boolean> {
    const now = this.now();
    const changed = await this.store.revokeDevice(deviceId, now);
    await this.store.revokeDeviceTokens(deviceId, now);
    return changed;
  }

  /** The identity bound to a live access token, or null. */
  async authenticate(accessToken: string): Promise<DeviceIdentity | null> {
    if (typeof accessToken !== 'string' || accessToken.length === 0) return null;
    const row = await this.store.token(hashToken(accessToken));
    const now = this.now();
    if (!row || row.kind !== 'access' || row.revoked_at !== null || now >= row.expires_at) return null;
    const device = await this.store.device(row.device_id);
    if (!device || device.revoked_at !== null || !(await this.store.isMember(device.user_id, device.workspace_id))) return null;
    await this.store.touchDevice(device.id, now);
    return { workspace_id: device.workspace_id, user_id: device.user_id, device_id: device.id };
  }

  /** The pending, unexpired request behind a user code (already normalised), or undefined. */
  async pendingRequest(userCode: string): Promise<DeviceCodeRow | undefined> {
    const code = normaliseUserCode(userCode);
    const row = code ? await this.store.deviceCodeByUserCode(code) : undefined;
    if (!row || row.status !== 'pending' || this.now() >= row.expires_at) return undefined;
    return row;
  }

  /** Approves a pending request into one of the user's workspaces and pins the device's key. */
  async approve(userCode: string, userId: string, workspaceId: string): Promise<DeviceRow> {
    const row = await this.pendingRequest(userCode);
    if (!row) throw new ApprovalError('This code is unknown, expired or already used.', 'unknown_code');
    if (!(await this.store.isMember(userId, workspaceId))) throw new ApprovalError('You are not a member of that workspace.', 'not_member');
    if (this.reserved.has(row.device_id)) throw new ApprovalError(`The device id "${row.device_id}" is provisioned on this bridge and cannot be approved by sign-in.`, 'provisioned', { device_id: row.device_id });
    const existing = await this.store.device(row.device_id);
    if (existing && existing.revoked_at === null) {
      if (existing.user_id !== userId) throw new ApprovalError('This device is registered to another user; that registration must be revoked first.', 'other_user');
      if (existing.jwk_thumbprint !== row.jwk_thumbprint) {
        throw new ApprovalError('This device presents a different key than the one pinned for it; revoke the old registration first.', 'key_mismatch');
      }
    }
    const now = this.now();
    const device: DeviceRow = {
      id: row.device_id,
      user_id: userId,
      workspace_id: workspaceId,
      name: row.device_name,
      platform: row.platform,
      client_version: row.client_version,
      public_jwk: row.public_jwk,
      jwk_thumbprint: row.jwk_thumbprint,
      approved_at: now,
      revoked_at: null,
      last_seen_at: existing?.last_seen_at ?? null,
    };
    const moved = existing && existing.revoked_at === null && existing.workspace_id !== workspaceId;
    if (!(await this.store.approveDevice(row.device_code_hash, device, moved ? now : null))) {
      throw new ApprovalError('This code was decided meanwhile.', 'decided');
    }
    if (existing && existing.revoked_at === null && existing.workspace_id !== workspaceId) {
      this.onSuperseded({ workspace_id: existing.workspace_id, user_id: existing.user_id, device_id: existing.id });
    }
    return device;
  }

  /** Denies a pending request; the device's next poll gets `access_denied`. */
  async deny(userCode: string, userId: string): Promise<void> {
    const row = await this.pendingRequest(userCode);
    if (!row || !(await this.store.decideDeviceCode(row.device_code_hash, 'denied', userId, null))) {
      throw new ApprovalError('This code is unknown, expired or already used.', 'unknown_code');
    }
  }

  private async issue(device: DeviceRow, familyId: string, scope: string): Promise<TokenResponse> {
    const now = this.now();
    const access = newToken('access');
    const refresh = newToken('refresh');
    await this.store.insertTokens([
      {
        token_hash: hashToken(access), kind: 'access', device_id: device.id, family_id: familyId,
        expires_at: now + this.accessTokenTtlS * 1000, created_at: now, used_at: null, revoked_at: null,
      },
      {
        token_hash: hashToken(refresh), kind: 'refresh', device_id: device.id, family_id: familyId,
        expires_at: now + this.refreshTokenTtlS * 1000, created_at: now, used_at: null, revoked_at: null,
      },
    ]);
    await this.store.pruneTokens(now);
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: this.accessTokenTtlS,
      refresh_token: refresh,
      refresh_token_expires_in: this.refreshTokenTtlS,
      scope,
      workspace_id: device.workspace_id,
      user_id: device.user_id,
      device_id: device.id,
    };
  }
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}
