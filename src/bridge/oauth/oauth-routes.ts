/**
 * The bridge's login service: the OAuth routes of PROTOCOL.md §10 (`/v1/oauth/*`, `/device`), the
 * device authenticator the WebSocket upgrade uses, and device revocation with a callback so the
 * bridge can drop a revoked device's live session.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Database } from 'better-sqlite3';
import type { JWK } from 'jose';
import type { DeviceAuthenticator, DeviceIdentity } from '../auth.js';
import { DeviceFlow, OAuthError } from './device-flow.js';
import { readParams, sendOAuthJson, str } from './http-io.js';
import { OAuthStore, type ConfigUser, type DeviceRow } from './oauth-store.js';
import { SqliteLoginStore, type LoginStore } from './login-store.js';
import { ApprovalPage, memoryAttempts, type AttemptLimitsFactory } from './approval-page.js';
import { DEVICE_CODE_GRANT } from '../../protocol/oauth.js';
import type { AttemptLimits } from './rate-limit.js';

/** Bridge config keys this service reads (snake_case as in the config file). */
export interface OAuthServiceOptions {
  /**
   * Where the login state lives: the single process's SQLite database (the service adds its `oauth_` tables and
   * writes `users` to them), or a clustered bridge's store (`PgLoginStore`) whose users the caller has synced
   * (`await store.syncUsers(users)`) before building the service.
   */
  db: Database | LoginStore;
  /** `users` from the bridge config. */
  users: ConfigUser[];
  /** `public_url`: where browsers reach the bridge, e.g. `https://bridge.example.com`; a function when it is known only after listening (port 0). */
  public_url: string | (() => string);
  /** `access_token_ttl_s`, default 600. */
  access_token_ttl_s?: number;
  /** `refresh_token_ttl_s`, default 30 days. */
  refresh_token_ttl_s?: number;
  /** `device_code_ttl_s`, default 600. */
  device_code_ttl_s?: number;
  /** `device_poll_interval_s`, default 5. */
  device_poll_interval_s?: number;
  /** Failed code lookups allowed per client address and page session; default 5 per 10 minutes. */
  code_attempts?: { max: number; window_s: number };
  /** Wrong user codes the whole bridge accepts per minute; default 30. */
  wrong_codes_per_minute?: number;
  /** Device authorization requests per client address per 10 minutes; default 20. */
  authorizations_per_address?: number;
  /** Pending, unexpired device codes the bridge keeps at most; default 1000. */
  max_pending_codes?: number;
  /** Injectable clock for tests. */
  clock?: () => number;
  /** Device ids provisioned in the config (`device_tokens`): never registered by login. */
  reserved_device_ids?: string[];
  /** Whether a device has a live session now: the approval page's device list shows it. */
  is_online?: (identity: DeviceIdentity) => boolean | Promise<boolean>;
  /** Where the failure counters live (default: this process's memory; a cluster's are in PostgreSQL). */
  attempts?: AttemptLimitsFactory;
}

/** What the bridge knows about an approved device (no secrets). */
export interface RegisteredDevice {
  device_id: string;
  name: string;
  platform: string;
  client_version: string;
  workspace_id: string;
  user_id: string;
  approved_at: string;
  last_seen: string | null;
  revoked: boolean;
  key_id: string;
}

function toRegistered(d: DeviceRow): RegisteredDevice {
  return {
    device_id: d.id,
    name: d.name,
    platform: d.platform,
    client_version: d.client_version,
    workspace_id: d.workspace_id,
    user_id: d.user_id,
    approved_at: new Date(d.approved_at).toISOString(),
    last_seen: d.last_seen_at === null ? null : new Date(d.last_seen_at).toISOString(),
    revoked: d.revoked_at !== null,
    key_id: d.jwk_thumbprint,
  };
}

/** Device login for the reference bridge. */
export class OAuthService implements DeviceAuthenticator {
  /** The login tables. */
  readonly store: LoginStore;
  /** The grant logic. */
  readonly flow: DeviceFlow;
  private readonly page: ApprovalPage;
  private readonly publicUrl: () => string;
  private readonly events = new EventEmitter();
  private readonly clock: () => number;
  private readonly authLimiter: AttemptLimits;
  private readonly maxPendingCodes: number;

  constructor(opts: OAuthServiceOptions) {
    const pu = opts.public_url;
    this.publicUrl = () => (typeof pu === 'function' ? pu() : pu).replace(/\/+$/, '');
    if (isLoginStore(opts.db)) this.store = opts.db;
    else {
      const sync = new OAuthStore(opts.db);
      sync.syncUsers(opts.users);
      this.store = new SqliteLoginStore(sync);
    }
    const clock = opts.clock ?? Date.now;
    this.clock = clock;
    const attempts = opts.attempts ?? memoryAttempts;
    this.authLimiter = attempts('device_authorizations', opts.authorizations_per_address ?? 20, 10 * 60_000, clock);
    this.maxPendingCodes = opts.max_pending_codes ?? 1000;
    this.flow = new DeviceFlow(this.store, {
      ...(opts.access_token_ttl_s !== undefined ? { accessTokenTtlS: opts.access_token_ttl_s } : {}),
      ...(opts.refresh_token_ttl_s !== undefined ? { refreshTokenTtlS: opts.refresh_token_ttl_s } : {}),
      ...(opts.device_code_ttl_s !== undefined ? { deviceCodeTtlS: opts.device_code_ttl_s } : {}),
      ...(opts.device_poll_interval_s !== undefined ? { intervalS: opts.device_poll_interval_s } : {}),
      ...(opts.reserved_device_ids ? { reservedDeviceIds: opts.reserved_device_ids } : {}),
      onSuperseded: (old) => this.events.emit('revoked', old),
      clock,
    });
    this.page = new ApprovalPage({
      flow: this.flow,
      store: this.store,
      secureCookies: () => this.publicUrl().startsWith('https:'),
      onDeviceRevoked: (identity) => this.events.emit('revoked', identity),
      ...(opts.is_online ? { isOnline: opts.is_online } : {}),
      ...(opts.wrong_codes_per_minute !== undefined ? { wrongCodesPerMinute: opts.wrong_codes_per_minute } : {}),
      ...(opts.code_attempts ? { codeAttempts: { max: opts.code_attempts.max, windowMs: opts.code_attempts.window_s * 1000 } } : {}),
      ...(opts.attempts ? { attempts: opts.attempts } : {}),
      clock,
    });
  }

  /** Serves `/v1/oauth/*` and `/device*`; resolves false for any other path so the bridge can route it. */
  async handleHttp(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    if (url.pathname.startsWith('/device')) return this.page.handle(req, res, url);
    if (!url.pathname.startsWith('/v1/oauth/')) return false;
    if (req.method !== 'POST') {
      sendOAuthJson(res, 405, { error: 'invalid_request', error_description: 'Use POST.' }, { allow: 'POST' });
      return true;
    }
    const params = await readParams(req);
    if (!params) {
      sendOAuthJson(res, 400, { error: 'invalid_request', error_description: 'The body must be a small form or JSON object.' });
      return true;
    }
    try {
      switch (url.pathname) {
        case '/v1/oauth/device_authorization': {
          // Each request keeps a row for 10 minutes: limited per address, and the table is capped.
          const who = `ip:${req.socket.remoteAddress ?? 'unknown'}`;
          if ((await this.authLimiter.blocked(who)) || (await this.store.countLiveDeviceCodes(this.clock())) >= this.maxPendingCodes) {
            const wait = Math.max(60_000, await this.authLimiter.retryAfterMs(who));
            sendOAuthJson(res, 429, { error: 'slow_down', error_description: 'Too many device authorization requests; try again later.' }, { 'retry-after': String(Math.ceil(wait / 1000)) });
            return true;
          }
          await this.authLimiter.fail(who);
          sendOAuthJson(res, 200, await this.deviceAuthorization(params));
          return true;
        }
        case '/v1/oauth/token':
          sendOAuthJson(res, 200, await this.token(params));
          return true;
        case '/v1/oauth/revoke': {
          const token = str(params, 'token');
          if (!token) throw new OAuthError('invalid_request', 'token is required.');
          const identity = await this.flow.revokeToken(token);
          if (identity) this.events.emit('revoked', identity);
          // RFC 7009 §2.2: an unknown token is answered like a revoked one.
          sendOAuthJson(res, 200, {});
          return true;
        }
        default:
          sendOAuthJson(res, 404, { error: 'invalid_request', error_description: 'Unknown OAuth endpoint.' });
          return true;
      }
    } catch (e) {
      if (!(e instanceof OAuthError)) throw e;
      sendOAuthJson(res, e.status, { error: e.error, error_description: e.message });
      return true;
    }
  }

  /** The identity bound to a live access token, or null (missing, unknown, expired, revoked). */
  authenticateDevice(token: string): Promise<DeviceIdentity | null> {
    return this.flow.authenticate(token);
  }

  /** Revokes a device: its tokens stop working, `onRevoked` listeners run so its live session can be closed. */
  async revokeDevice(deviceId: string): Promise<boolean> {
    const d = await this.store.device(deviceId);
    const changed = await this.flow.revokeDevice(deviceId);
    if (changed && d) this.events.emit('revoked', { workspace_id: d.workspace_id, user_id: d.user_id, device_id: d.id } satisfies DeviceIdentity);
    return changed;
  }

  /**
   * Registers a listener for device revocations (owner, administrator, or sign-out); it gets the revoked
   * registration's whole identity, so only that session is closed. Returns an unsubscribe function.
   */
  onRevoked(listener: (identity: DeviceIdentity) => void): () => void {
    this.events.on('revoked', listener);
    return () => this.events.off('revoked', listener);
  }

  /** The public JWK pinned at approval for exactly this identity (verifies its Adapter Card), or null. */
  async devicePublicJwk(identity: DeviceIdentity): Promise<JWK | null> {
    const d = await this.store.device(identity.device_id);
    if (!d || d.revoked_at !== null || d.workspace_id !== identity.workspace_id || d.user_id !== identity.user_id) return null;
    return { ...(JSON.parse(d.public_jwk) as JWK), kid: d.jwk_thumbprint };
  }

  /** One registered device, or undefined. */
  async device(deviceId: string): Promise<RegisteredDevice | undefined> {
    const d = await this.store.device(deviceId);
    return d ? toRegistered(d) : undefined;
  }

  /** Registered devices of a workspace (all when omitted), for `GET /v1/devices`; the bridge adds `online`. */
  async listDevices(workspaceId?: string): Promise<RegisteredDevice[]> {
    return (await this.store.devices(workspaceId)).map(toRegistered);
  }

  /** Records the client version a device reported in `session.hello`. */
  noteClientVersion(deviceId: string, clientVersion: string): Promise<void> {
    return this.store.touchDevice(deviceId, this.clock(), clientVersion);
  }

  private async deviceAuthorization(params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const grant = await this.flow.authorize({
      client_id: str(params, 'client_id') ?? '',
      scope: str(params, 'scope'),
      device_id: str(params, 'device_id') ?? '',
      device_name: str(params, 'device_name') ?? '',
      platform: str(params, 'platform') ?? '',
      client_version: str(params, 'client_version') ?? '',
      public_jwk: params['public_jwk'],
    });
    const verification = `${this.publicUrl()}/device`;
    return {
      ...grant,
      verification_uri: verification,
      verification_uri_complete: `${verification}?user_code=${encodeURIComponent(grant.user_code)}`,
    };
  }

  private async token(params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const grantType = str(params, 'grant_type');
    const clientId = str(params, 'client_id') ?? '';
    if (grantType === DEVICE_CODE_GRANT) {
      const code = str(params, 'device_code');
      if (!code) throw new OAuthError('invalid_request', 'device_code is required.');
      return { ...(await this.flow.pollDeviceCode(code, clientId)) };
    }
    if (grantType === 'refresh_token') {
      const rt = str(params, 'refresh_token');
      if (!rt) throw new OAuthError('invalid_request', 'refresh_token is required.');
      return { ...(await this.flow.refresh(rt, clientId)) };
    }
    throw new OAuthError('unsupported_grant_type', 'Supported grant types: device_code and refresh_token.');
  }
}

/** True for a {@link LoginStore} (a cluster's), false for a better-sqlite3 database. */
function isLoginStore(x: Database | LoginStore): x is LoginStore {
  return typeof (x as LoginStore).insertDeviceCode === 'function';
}
