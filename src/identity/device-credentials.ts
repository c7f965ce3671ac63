/**
 * Everything the agent needs at start-up to connect as the logged-in device: the login facts, the
 * secret store, a token manager and the signing key. One call for the agent to wire.
 */
import { WireError } from '../protocol/errors.js';
import { loadDeviceKey, type DeviceKey } from './device-key.js';
import { readLoginState, type LoginState } from './login-state.js';
import { OAuthClient } from './oauth-client.js';
import { openSecretStore, type SecretStore } from './secret-store.js';
import { TokenManager } from './token-manager.js';

/** The logged-in device's credentials. */
export interface DeviceCredentials {
  state: LoginState;
  store: SecretStore;
  tokens: TokenManager;
  key: DeviceKey;
}

/**
 * Loads the credentials `aios-device login` left behind. `tokenFile` is the config's `bridge.token_file`
 * (when set, the file replaces the keychain). Throws `unauthorized` when the device is not signed in,
 * and `SecretStoreUnavailableError` when the keychain cannot be reached.
 */
export async function loadDeviceCredentials(opts: { dataDir: string; tokenFile?: string | undefined }): Promise<DeviceCredentials> {
  const state = await readLoginState(opts.dataDir);
  if (!state) throw new WireError('unauthorized', 'This device is not signed in to a bridge; run `aios-device login --bridge URL`.');
  const tokenFile = opts.tokenFile ?? (typeof state.secret_store === 'object' ? state.secret_store.token_file : undefined);
  const store = await openSecretStore({ tokenFile });
  const key = await loadDeviceKey(store, state.device_id);
  if (!key) throw new WireError('unauthorized', 'The device key is missing from the secret store; run `aios-device login` again.');
  const client = new OAuthClient(state.bridge_url);
  const tokens = new TokenManager({ store, deviceId: state.device_id, refresh: (rt) => client.refresh(rt) });
  return { state, store, tokens, key };
}

/** Adapts a {@link TokenManager} to the agent's `TokenProvider` seam (`onUnauthorized` resolves true when a fresh token exists). */
export function tokenProvider(tokens: TokenManager): { getAccessToken(): Promise<string>; onUnauthorized(): Promise<boolean> } {
  return {
    getAccessToken: () => tokens.getAccessToken(),
    onUnauthorized: () => tokens.onUnauthorized().then(
      () => true,
      () => false,
    ),
  };
}
