/**
 * Signing the device in from the window (issue 19): the agent runs the RFC 8628 flow of
 * `identity/login-client.ts` itself, keeps its live state for the page and the tray (not signed in,
 * waiting with a code, signed in, denied, expired, failed), and signs out (revoke at the bridge, delete
 * the tokens). The agent reacts through two callbacks: `onSignedIn` (connect with the stored tokens) and
 * `onSigningOut` (drop the session first, so the revocation is not reported as a failure).
 */
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { login, LoginError, logout } from '../identity/login-client.js';
import { readLoginState, type LoginState } from '../identity/login-state.js';
import { bridgeHttpOrigin, OAuthClientError, type DeviceAuthorization } from '../identity/oauth-client.js';
import { openSecretStore, SecretStoreUnavailableError } from '../identity/secret-store.js';
import { RPC, RpcError } from '../protocol/errors.js';
import type { Logger } from '../base/logger.js';
import type { RpcMethod } from '../protocol/rpc-methods.js';
import { serveControlApi, type ControlHandlers } from '../control/server.js';

/** Where a sign-in stands. `denied`, `expired` and `failed` are not signed in either: the page offers to start again. */
export type SignInState = 'not_signed_in' | 'waiting' | 'signed_in' | 'denied' | 'expired' | 'failed';

/** Why a sign-in failed (state `failed`), as a stable code the page and tray translate. */
export type SignInErrorCode = 'bridge_unreachable' | 'login_not_enabled' | 'secret_store_unavailable' | 'bridge_error';

/** What `control.signin.status` answers and `control/notification.signin` carries. No token, no device code. */
export interface SignInView {
  state: SignInState;
  /** The bridge (HTTP origin): the one signed in to, being signed in to, or the config's default. */
  bridge_url?: string;
  /** While `waiting`: what the person types or scans. */
  user_code?: string;
  verification_uri?: string;
  verification_uri_complete?: string;
  /** While `waiting`: a PNG data URL of the QR code of `verification_uri_complete`. */
  qr?: string;
  expires_at?: string;
  /** While `signed_in`. */
  workspace_id?: string;
  user_id?: string;
  device_id?: string;
  device_name?: string;
  /** While `failed`: the code and the English sentence (the page shows its own by code). */
  error?: { code: SignInErrorCode; message: string };
}

/** Options of a {@link SignInService}. */
export interface SignInOptions {
  dataDir: string;
  /** The config's `bridge.token_file` when it is a secret file (or not there yet): tokens go there instead of the keychain. */
  tokenFile?: string | undefined;
  /** The config's bridge URL, shown prefilled. */
  defaultBridgeUrl?: string | undefined;
  clientVersion: string;
  deviceName?: string | undefined;
  log: Logger;
  /** After an approved sign-in was stored (login.json and the tokens). */
  onSignedIn(state: LoginState): void | Promise<void>;
  /** Before the tokens are revoked: drop the session. */
  onSigningOut(): void | Promise<void>;
}

/** Swallows the CLI sentences login() and logout() write; the window shows its own. */
const quiet = (): Writable => new Writable({ write: (_c, _e, cb) => cb() });

const origin = (url: string | undefined): string | undefined => {
  try {
    return url ? bridgeHttpOrigin(url) : undefined;
  } catch {
    return undefined;
  }
};

/** The device's sign-in, run by the agent. Emits `change` with a {@link SignInView} on every state change. */
export class SignInService extends EventEmitter<{ change: [SignInView] }> {
  private view: SignInView;
  private attempt: AbortController | undefined;

  constructor(private readonly o: SignInOptions, signedIn: LoginState | null) {
    super();
    this.view = signedIn ? this.signedInView(signedIn) : { state: 'not_signed_in', ...this.defaultBridge() };
  }

  /** The current state. */
  status(): SignInView {
    return { ...this.view };
  }

  /**
   * Asks the bridge for a code and waits for it in the background. Resolves once the code is there
   * (`waiting`) or the request failed (`failed`); refused with invalid params for a bad URL or when signed in.
   */
  async start(bridgeUrl: string | undefined): Promise<SignInView> {
    const url = bridgeUrl?.trim() || this.o.defaultBridgeUrl;
    if (!url) throw new RpcError(RPC.invalid_params, 'bridge_url is required (the config names no bridge).', { type: 'invalid_arguments' });
    let http: string;
    try {
      http = bridgeHttpOrigin(url);
    } catch {
      throw new RpcError(RPC.invalid_params, 'bridge_url must be an http(s) or ws(s) URL.', { type: 'invalid_arguments' });
    }
    if (this.view.state === 'signed_in') throw new RpcError(RPC.invalid_params, 'This device is signed in; sign out first.', { type: 'signed_in' });
    this.attempt?.abort();
    const attempt = new AbortController();
    this.attempt = attempt;
    let codeShown: () => void = () => undefined;
    const shown = new Promise<void>((r) => (codeShown = r));
    const done = this.run(url, http, attempt, async (g) => {
      // qrcode (and its PNG encoder) is loaded by the first sign-in that shows a code, not at rest (issue 32).
      const { default: QRCode } = await import('qrcode');
      const qr = await QRCode.toDataURL(g.verification_uri_complete ?? g.verification_uri, { errorCorrectionLevel: 'M', margin: 4, scale: 6 });
      if (attempt.signal.aborted) return;
      this.set({
        state: 'waiting',
        bridge_url: http,
        user_code: g.user_code,
        verification_uri: g.verification_uri,
        verification_uri_complete: g.verification_uri_complete ?? g.verification_uri,
        qr,
        expires_at: new Date(Date.now() + g.expires_in * 1000).toISOString(),
      });
      codeShown();
    });
    await Promise.race([shown, done]);
    return this.status();
  }

  /** Stops waiting for approval (the code stays unapproved and expires at the bridge). */
  cancel(): SignInView {
    if (this.view.state === 'waiting') {
      this.attempt?.abort();
      this.attempt = undefined;
      this.set({ state: 'not_signed_in', bridge_url: this.view.bridge_url });
    }
    return this.status();
  }

  /**
   * Signs out: drops the session, revokes the tokens at the bridge (`POST /v1/oauth/revoke`), deletes
   * them and the login record. `revoked` is false when the bridge could not be reached (deleted locally).
   */
  async signOut(): Promise<SignInView & { revoked: boolean }> {
    this.cancel();
    const state = await readLoginState(this.o.dataDir);
    await this.o.onSigningOut();
    const recorded = state && typeof state.secret_store === 'object' ? state.secret_store.token_file : undefined;
    let revoked: boolean;
    try {
      const store = await openSecretStore({ tokenFile: this.o.tokenFile ?? recorded });
      revoked = (await logout({ dataDir: this.o.dataDir, store, out: quiet() })).revoked;
    } catch (e) {
      if (e instanceof SecretStoreUnavailableError) throw new RpcError(RPC.internal_error, e.message, { type: 'secret_store_unavailable' });
      throw e;
    }
    this.o.log.info({ revoked }, 'signed out from the window');
    this.set({ state: 'not_signed_in', ...(state ? { bridge_url: state.bridge_url } : this.defaultBridge()) });
    return { ...this.status(), revoked };
  }

  /** Records a sign-in stored elsewhere (`aios-device login` while the agent runs). */
  noteSignedIn(state: LoginState): void {
    this.attempt?.abort();
    this.set(this.signedInView(state));
  }

  /** Records that the bridge no longer accepts the stored sign-in (revoked on its page). */
  noteSignedOut(): void {
    if (this.view.state === 'signed_in') this.set({ state: 'not_signed_in', bridge_url: this.view.bridge_url });
  }

  /** Stops a running attempt (agent stop). */
  close(): void {
    this.attempt?.abort();
  }

  private async run(url: string, http: string, attempt: AbortController, onCode: (g: Omit<DeviceAuthorization, 'device_code'>) => Promise<void>): Promise<void> {
    let pending: Promise<void> = Promise.resolve();
    try {
      const store = await openSecretStore({ tokenFile: this.o.tokenFile });
      await login({
        bridgeUrl: url,
        dataDir: this.o.dataDir,
        store,
        clientVersion: this.o.clientVersion,
        ...(this.o.deviceName ? { deviceName: this.o.deviceName } : {}),
        out: quiet(),
        openBrowser: false,
        qr: false,
        signal: attempt.signal,
        onCode: (g) => {
          pending = onCode(g);
        },
      });
      await pending;
      const state = await readLoginState(this.o.dataDir);
      if (!state) throw new LoginError('bridge_error', 'core.login.not_recorded');
      this.o.log.info({ workspace_id: state.workspace_id, user_id: state.user_id }, 'signed in from the window');
      if (this.attempt === attempt) this.attempt = undefined;
      this.set(this.signedInView(state));
      await this.o.onSignedIn(state);
    } catch (e) {
      await pending.catch(() => undefined);
      if (attempt.signal.aborted && this.attempt !== attempt) return; // superseded by a newer attempt or a sign-out
      if (this.attempt === attempt) this.attempt = undefined;
      this.set(this.failedView(e, http));
    }
  }

  private failedView(e: unknown, http: string): SignInView {
    const base = { bridge_url: http };
    if (e instanceof LoginError) {
      if (e.code === 'access_denied') return { state: 'denied', ...base };
      if (e.code === 'expired_token') return { state: 'expired', ...base };
      if (e.code === 'cancelled') return { state: 'not_signed_in', ...base };
      return { state: 'failed', ...base, error: { code: 'bridge_error', message: e.message } };
    }
    if (e instanceof SecretStoreUnavailableError) return { state: 'failed', ...base, error: { code: 'secret_store_unavailable', message: e.message } };
    if (e instanceof OAuthClientError) {
      const code: SignInErrorCode = e.error === 'bridge_unreachable' || e.error === 'login_not_enabled' ? e.error : 'bridge_error';
      return { state: 'failed', ...base, error: { code, message: e.message } };
    }
    this.o.log.warn({ err: String(e) }, 'sign-in failed');
    return { state: 'failed', ...base, error: { code: 'bridge_error', message: 'The sign-in failed.' } };
  }

  private signedInView(s: LoginState): SignInView {
    return { state: 'signed_in', bridge_url: s.bridge_url, workspace_id: s.workspace_id, user_id: s.user_id, device_id: s.device_id, device_name: s.device_name };
  }

  private defaultBridge(): { bridge_url?: string } {
    const b = origin(this.o.defaultBridgeUrl);
    return b ? { bridge_url: b } : {};
  }

  private set(v: SignInView): void {
    this.view = v;
    this.emit('change', this.status());
  }
}

/** The sign-in handlers of the control API (src/control/api.ts), by its keys. */
export function signInControlHandlers(svc: SignInService): ControlHandlers {
  return {
    signinStatus: () => svc.status(),
    signinStart: ({ bridge_url }) => svc.start(bridge_url),
    signinCancel: () => svc.cancel(),
    signout: () => svc.signOut(),
  };
}

/** The local endpoint's sign-in methods by wire name (local token required, like every control method). */
export function signInMethods(svc: SignInService): Record<string, RpcMethod> {
  return serveControlApi(signInControlHandlers(svc));
}
