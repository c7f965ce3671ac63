/**
 * `aios-device login` / `logout`: the device side of RFC 8628. Shows the user code, the verification
 * URL and a QR code, opens a browser where there is one, polls the bridge at the interval it asks
 * for (adding 5 s at every `slow_down`), and on approval stores the tokens in the secret store.
 */
import { spawn } from 'node:child_process';
import { arch, hostname, platform } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadOrCreateDeviceId } from './device-id.js';
import { loadOrCreateDeviceKey } from './device-key.js';
import { clearLoginState, readLoginState, writeLoginState, type LoginState } from './login-state.js';
import { bridgeDeviceUrl, OAuthClient, OAuthClientError, type DeviceAuthorization, type TokenGrant } from './oauth-client.js';
import { FileSecretStore, type SecretStore } from './secret-store.js';
import { readTokens, toStoredTokens, tokensAccount } from './token-manager.js';
import { coreMessage, localeFromEnv, strings, type CoreKey, type Locale, type Message, type MessageParams } from '../i18n/index.js';

/** Why a login ended without tokens. Stable codes: `access_denied`, `expired_token`, `bridge_error`, `cancelled`. */
export class LoginError extends Error {
  /** The sentence as a catalogue message, for the user's language (`message` is its English text). */
  readonly said: Message;
  constructor(
    readonly code: 'access_denied' | 'expired_token' | 'bridge_error' | 'cancelled',
    key: CoreKey,
    params?: MessageParams,
  ) {
    const said = coreMessage(key, params);
    super(strings.render(said, 'en'));
    this.said = said;
    this.name = 'LoginError';
  }
}

/** Options of {@link login}. */
export interface LoginOptions {
  /** The bridge, as `http(s)://host:port` or its `ws(s)://…/v1/device` URL. */
  bridgeUrl: string;
  dataDir: string;
  store: SecretStore;
  /** This client's version, sent so the approver and the bridge see it. */
  clientVersion: string;
  /** Shown on the approval page; default the host name. */
  deviceName?: string;
  /** Where the code and messages are printed; default stdout. */
  out?: NodeJS.WritableStream;
  /** The language of what is printed; default the environment's (LC_ALL, LC_MESSAGES, LANG). */
  locale?: Locale;
  /** Open the verification page in a browser (default: when a desktop seems present), or a function that opens it. */
  openBrowser?: boolean | ((url: string) => void);
  /** Print a QR code of the verification URL (default true). */
  qr?: boolean;
  signal?: AbortSignal;
  /** Told the code as soon as the bridge issued it (the window shows it; the CLI prints it). */
  onCode?: (grant: Omit<DeviceAuthorization, 'device_code'>) => void;
}

/** The identity a login bound. */
export interface LoginResult {
  device_id: string;
  workspace_id: string;
  user_id: string;
  device_url: string;
}

/** Runs the device login until approval, denial, expiry or abort. */
export async function login(opts: LoginOptions): Promise<LoginResult> {
  const out = opts.out ?? process.stdout;
  const locale = opts.locale ?? localeFromEnv();
  const say = (key: CoreKey, params?: MessageParams): string => strings.render(coreMessage(key, params), locale);
  const client = new OAuthClient(opts.bridgeUrl);
  const deviceId = await loadOrCreateDeviceId(opts.dataDir);
  // Touches the secret store before any code is shown, so a missing keychain fails before the user approves anything.
  const key = await loadOrCreateDeviceKey(opts.store, deviceId);
  const deviceName = opts.deviceName?.trim() || hostname();
  const grant = await client.deviceAuthorization({
    device_id: deviceId,
    device_name: deviceName,
    platform: `${platform()} ${arch()}`,
    client_version: opts.clientVersion,
    public_jwk: key.publicJwk,
  });
  const openUrl = grant.verification_uri_complete ?? grant.verification_uri;
  const { device_code: _secret, ...shown } = grant;
  opts.onCode?.(shown);
  out.write(
    `\n${say('core.login.open')}\n\n    ${grant.verification_uri}\n\n${say('core.login.enter')}\n\n    ${grant.user_code}\n\n` +
      `${say('core.login.check', { name: deviceName })}\n`,
  );
  if (opts.qr ?? true) {
    out.write(`${say('core.login.scan', { url: openUrl })}\n`);
    // Loaded by a sign-in that shows a code, not by the agent at rest (issue 32).
    const { default: qrcode } = await import('qrcode-terminal');
    qrcode.generate(openUrl, { small: true }, (q) => out.write(q + '\n'));
  }
  const open = opts.openBrowser ?? hasDesktop();
  if (typeof open === 'function') open(openUrl);
  else if (open) openInBrowser(openUrl);
  out.write(`${say('core.login.waiting', { minutes: Math.round(grant.expires_in / 60) })}\n`);

  const tokens = await poll(client, grant.device_code, grant.interval ?? 5, grant.expires_in, () => out.write(`${say('core.login.bridge_silent')}\n`), opts.signal);
  if (tokens.device_id !== deviceId) throw new LoginError('bridge_error', 'core.login.other_device');
  await opts.store.set(tokensAccount(deviceId), JSON.stringify(toStoredTokens(tokens, Date.now())));
  const state: LoginState = {
    bridge_url: client.origin,
    device_url: bridgeDeviceUrl(opts.bridgeUrl),
    device_id: deviceId,
    device_name: deviceName,
    workspace_id: tokens.workspace_id,
    user_id: tokens.user_id,
    logged_in_at: new Date().toISOString(),
    secret_store: opts.store instanceof FileSecretStore ? { token_file: opts.store.path } : 'keychain',
  };
  await writeLoginState(opts.dataDir, state);
  const store = opts.store instanceof FileSecretStore ? coreMessage('core.login.store_file', { file: opts.store.path }) : coreMessage('core.login.store_keychain');
  out.write(`${say('core.login.signed_in', { name: deviceName, device: deviceId, workspace: tokens.workspace_id, user: tokens.user_id, store })}\n`);
  return { device_id: deviceId, workspace_id: tokens.workspace_id, user_id: tokens.user_id, device_url: state.device_url };
}

async function poll(
  client: OAuthClient,
  deviceCode: string,
  intervalS: number,
  expiresInS: number,
  bridgeSilent: () => void,
  signal: AbortSignal | undefined,
): Promise<TokenGrant> {
  const deadline = Date.now() + expiresInS * 1000;
  // A floor keeps a bridge that says "interval 0" (tests) from being hammered.
  let intervalMs = Math.max(100, intervalS * 1000);
  let warnedUnreachable = false;
  for (;;) {
    try {
      await sleep(intervalMs, undefined, signal ? { signal } : undefined);
    } catch {
      throw new LoginError('cancelled', 'core.login.cancelled');
    }
    try {
      return await client.pollToken(deviceCode);
    } catch (e) {
      if (!(e instanceof OAuthClientError)) throw e;
      switch (e.error) {
        case 'authorization_pending':
          break;
        case 'slow_down':
          intervalMs += 5_000; // RFC 8628 §3.5: cumulative for the rest of this login
          break;
        case 'access_denied':
          throw new LoginError('access_denied', 'core.login.denied');
        case 'expired_token':
          throw new LoginError('expired_token', 'core.login.expired');
        case 'bridge_unreachable':
          // A blip while the user is still approving must not end the login.
          if (!warnedUnreachable) bridgeSilent();
          warnedUnreachable = true;
          if (Date.now() > deadline) throw new LoginError('expired_token', 'core.login.expired_unreachable');
          break;
        default:
          throw new LoginError('bridge_error', 'core.login.refused', { error: e.error, message: e.message });
      }
    }
  }
}

function hasDesktop(): boolean {
  if (process.platform === 'darwin' || process.platform === 'win32') return true;
  return Boolean(process.env['DISPLAY'] || process.env['WAYLAND_DISPLAY']);
}

/** Opens a URL in the default browser; failure is ignored because the URL and code are printed anyway. */
export function openInBrowser(url: string): void {
  const [cmd, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]];
  try {
    const child = spawn(cmd, args as string[], { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // no browser launcher: the printed URL is enough
  }
}

/** Options of {@link logout}. */
export interface LogoutOptions {
  dataDir: string;
  store: SecretStore;
  out?: NodeJS.WritableStream;
  /** The language of what is printed; default the environment's. */
  locale?: Locale;
}

/** Revokes the device's tokens at the bridge and deletes them locally; the device id and key stay, so a later login is the same device. */
export async function logout(opts: LogoutOptions): Promise<{ revoked: boolean; wasSignedIn: boolean }> {
  const out = opts.out ?? process.stdout;
  const say = (key: CoreKey, params?: MessageParams): string => strings.render(coreMessage(key, params), opts.locale ?? localeFromEnv());
  const state = await readLoginState(opts.dataDir);
  const deviceId = state?.device_id ?? (await loadOrCreateDeviceId(opts.dataDir));
  const tokens = await readTokens(opts.store, deviceId);
  if (!state && !tokens) {
    out.write(`${say('core.logout.not_signed_in')}\n`);
    return { revoked: false, wasSignedIn: false };
  }
  let revoked = false;
  if (tokens && state) {
    try {
      await new OAuthClient(state.bridge_url).revoke(tokens.refresh_token);
      revoked = true;
    } catch (e) {
      out.write(`${say('core.logout.unreachable', { error: (e as Error).message })}\n`);
    }
  }
  await opts.store.delete(tokensAccount(deviceId));
  await clearLoginState(opts.dataDir);
  out.write(`${say(revoked ? 'core.logout.revoked' : 'core.logout.local')}\n`);
  return { revoked, wasSignedIn: true };
}
