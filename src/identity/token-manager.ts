/**
 * Keeps the device's access token fresh: refreshes it shortly before it expires and on demand after
 * the bridge answered `unauthorized`, with one refresh in flight at a time that every concurrent
 * caller shares. A refresh never touches the live session, so calls in flight are not dropped.
 * Tokens are never logged, and leave this module only as the return value of `getAccessToken`.
 */
import { WireError } from '../protocol/errors.js';
import { OAuthClientError, type TokenGrant } from './oauth-client.js';
import type { SecretStore } from './secret-store.js';

/** What the secret store holds for a signed-in device. */
export interface StoredTokens {
  access_token: string;
  /** Milliseconds since the epoch. */
  access_expires_at: number;
  /** When the access token was received (ms); with the expiry it gives the token's life. */
  access_issued_at: number;
  refresh_token: string;
  workspace_id: string;
  user_id: string;
  device_id: string;
}

/** The secret-store account of a device's tokens. */
export function tokensAccount(deviceId: string): string {
  return `${deviceId}/tokens`;
}

/** Turns a token response into what is stored. */
export function toStoredTokens(grant: TokenGrant, now: number): StoredTokens {
  return {
    access_token: grant.access_token,
    access_expires_at: now + grant.expires_in * 1000,
    access_issued_at: now,
    refresh_token: grant.refresh_token,
    workspace_id: grant.workspace_id,
    user_id: grant.user_id,
    device_id: grant.device_id,
  };
}

/** Reads a device's stored tokens, or null. */
export async function readTokens(store: SecretStore, deviceId: string): Promise<StoredTokens | null> {
  const raw = await store.get(tokensAccount(deviceId));
  return raw ? (JSON.parse(raw) as StoredTokens) : null;
}

/** Options of a {@link TokenManager}. */
export interface TokenManagerOptions {
  store: SecretStore;
  deviceId: string;
  /** Performs the refresh grant (normally `OAuthClient.refresh`). */
  refresh: (refreshToken: string) => Promise<TokenGrant>;
  clock?: () => number;
  /** How long before expiry to refresh; default a fifth of the token's life, at most 60 s. */
  marginMs?: number;
}

const NOT_SIGNED_IN = 'This device is not signed in to a bridge; run `aios-device login --bridge URL`.';
const SIGN_IN_AGAIN = 'The bridge no longer accepts this device’s sign-in (revoked or expired); run `aios-device login` again.';

/** The device's access token, kept fresh. */
export class TokenManager {
  private tokens: StoredTokens | null | undefined;
  private inFlight: Promise<StoredTokens> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(private readonly opts: TokenManagerOptions) {
    this.now = opts.clock ?? Date.now;
  }

  /** Workspace, user and device the tokens are bound to (what `session.hello` must send). */
  async identity(): Promise<{ workspace_id: string; user_id: string; device_id: string }> {
    const t = await this.current();
    return { workspace_id: t.workspace_id, user_id: t.user_id, device_id: t.device_id };
  }

  /** An access token valid for at least the margin, refreshing first when needed. */
  async getAccessToken(): Promise<string> {
    const t = await this.current();
    if (this.now() < t.access_expires_at - this.margin(t)) return t.access_token;
    return (await this.refreshOnce()).access_token;
  }

  /** After the bridge refused `rejected` (or the current token): a new access token, unless another caller already got one. */
  async onUnauthorized(rejected?: string): Promise<string> {
    const t = await this.current();
    if (rejected !== undefined && t.access_token !== rejected && this.now() < t.access_expires_at) return t.access_token;
    return (await this.refreshOnce()).access_token;
  }

  /** Refreshes in the background shortly before each expiry (keeps the refresh token's life rolling while the agent runs). */
  start(onError: (e: Error) => void = () => undefined): void {
    this.stop();
    const schedule = async (): Promise<void> => {
      try {
        const t = await this.current();
        const due = Math.max(1_000, t.access_expires_at - this.margin(t) - this.now());
        this.timer = setTimeout(() => {
          this.refreshOnce().then(
            () => void schedule(),
            (e: Error) => {
              onError(e);
              // Transient failures retry; a definitive refusal stops until someone signs in again.
              if (!(e instanceof WireError && e.type === 'unauthorized')) this.timer = setTimeout(() => void schedule(), 30_000).unref();
            },
          );
        }, due).unref();
      } catch (e) {
        onError(e as Error);
      }
    };
    void schedule();
  }

  /** Stops background refreshing. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private margin(t: StoredTokens): number {
    if (this.opts.marginMs !== undefined) return this.opts.marginMs;
    const life = t.access_expires_at - (t.access_issued_at ?? t.access_expires_at - 300_000);
    return Math.min(60_000, Math.max(0, life / 5));
  }

  private async current(): Promise<StoredTokens> {
    if (this.tokens === undefined) this.tokens = await readTokens(this.opts.store, this.opts.deviceId);
    if (!this.tokens) throw new WireError('unauthorized', NOT_SIGNED_IN);
    return this.tokens;
  }

  private refreshOnce(): Promise<StoredTokens> {
    this.inFlight ??= this.doRefresh().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async doRefresh(): Promise<StoredTokens> {
    const mine = await this.current();
    // Another process (a second `login`, another agent instance) may have rotated the tokens already.
    const stored = await readTokens(this.opts.store, this.opts.deviceId);
    if (!stored) {
      this.tokens = null;
      throw new WireError('unauthorized', NOT_SIGNED_IN);
    }
    if (stored.refresh_token !== mine.refresh_token && this.now() < stored.access_expires_at - this.margin(stored)) {
      this.tokens = stored;
      return stored;
    }
    let grant: TokenGrant;
    try {
      grant = await this.opts.refresh(stored.refresh_token);
    } catch (e) {
      if (e instanceof OAuthClientError && (e.error === 'invalid_grant' || e.error === 'invalid_client')) {
        // Definitive: keeping dead tokens would only make every later start fail the same way.
        await this.opts.store.delete(tokensAccount(this.opts.deviceId));
        this.tokens = null;
        throw new WireError('unauthorized', SIGN_IN_AGAIN);
      }
      throw e;
    }
    const next = toStoredTokens(grant, this.now());
    await this.opts.store.set(tokensAccount(this.opts.deviceId), JSON.stringify(next));
    this.tokens = next;
    return next;
  }
}
