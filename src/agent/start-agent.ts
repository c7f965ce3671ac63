/**
 * Starts a complete agent from a config: the one place where subsystems are wired together, used by
 * `aios-device run`, the demo and end-to-end tests.
 */
import type { AgentConfig } from '../config/agent-config.js';
import { ConfigError } from '../config/load.js';
import { ConsentService, checkAdminPolicy } from '../consent/index.js';
import type { Logger } from '../sdk/index.js';
import { Agent, configTokenProvider, type AgentOptions, type TokenProvider } from './agent.js';
import { HttpBlobClient } from './blob-client.js';
import { loadDeviceCredentials, tokenProvider, type DeviceCredentials } from '../identity/device-credentials.js';
import { isSecretFile } from '../identity/secret-store.js';
import type { DeviceKey } from '../identity/device-key.js';

/** A running agent and how to stop it. */
export interface RunningAgent {
  agent: Agent;
  consent: ConsentService;
  /** The device key (from login), when the device signed in. */
  deviceKey: DeviceKey | undefined;
  endpointFile: string;
  stop(): Promise<void>;
}

/** Builds and starts the agent and writes endpoint.json. */
export async function startAgent(config: AgentConfig, log: Logger, extra: Partial<AgentOptions> = {}): Promise<RunningAgent> {
  const creds = extra.tokens ? undefined : await loginCredentials(config);
  if (creds) config = withLogin(config, creds);
  const consent = new ConsentService(config, { log: log.child({ component: 'consent' }) });
  const tokens: TokenProvider = extra.tokens ?? (creds ? tokenProvider(creds.tokens) : configTokenProvider(config));
  creds?.tokens.start((e) => log.warn({ err: String(e) }, 'token refresh failed; will retry'));
  const blobs = config.bridge?.url ? new HttpBlobClient({ baseUrl: config.bridge.url, token: () => tokens.getAccessToken() }) : undefined;
  const agent = new Agent(config, {
    log,
    consent,
    observers: [consent],
    tokens,
    ...(blobs ? { blobs } : {}),
    ...extra,
  });
  agent.onFatal = (f) => log.error({ type: f.type }, `bridge session stopped: ${f.message}`);
  try {
    await agent.start();
    const bad = checkAdminPolicy(config.policy ?? {}, agent.registry.descriptors());
    if (bad.length) throw new ConfigError(config.source, bad);
  } catch (e) {
    await agent.stop().catch(() => undefined);
    creds?.tokens.stop();
    consent.close();
    throw e;
  }
  const endpointFile = agent.writeEndpointFile({});
  log.info({ endpoint: endpointFile, functions: agent.registry.ids().length }, 'agent ready');
  return {
    agent,
    consent,
    deviceKey: creds?.key,
    endpointFile,
    async stop() {
      await agent.stop();
      creds?.tokens.stop();
      consent.close();
    },
  };
}

/**
 * The credentials `aios-device login` stored, when the config does not provision a token itself
 * (`bridge.token`, or a `bridge.token_file` holding a bare token). Undefined when the device never
 * signed in and the config names no bridge (a local-only agent).
 */
async function loginCredentials(config: AgentConfig): Promise<DeviceCredentials | undefined> {
  if (config.bridge?.token) return undefined;
  const file = config.bridge?.token_file;
  if (file && !(await isSecretFile(file))) return undefined;
  try {
    return await loadDeviceCredentials({ dataDir: config.data_dir, tokenFile: file });
  } catch (e) {
    if (!config.bridge?.url && (e as { type?: string }).type === 'unauthorized') return undefined;
    throw e;
  }
}

/** Fills the bridge URL and identity from the login where the config leaves them out. */
function withLogin(config: AgentConfig, creds: DeviceCredentials): AgentConfig {
  const s = creds.state;
  return {
    ...config,
    bridge: { ...config.bridge, url: config.bridge?.url ?? s.device_url },
    identity: {
      workspace_id: config.identity?.workspace_id ?? s.workspace_id,
      user_id: config.identity?.user_id ?? s.user_id,
      device_id: config.identity?.device_id ?? s.device_id,
      device_name: config.identity?.device_name ?? s.device_name,
    },
  };
}
