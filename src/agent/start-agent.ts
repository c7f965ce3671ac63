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

/** A running agent and how to stop it. */
export interface RunningAgent {
  agent: Agent;
  consent: ConsentService;
  endpointFile: string;
  stop(): Promise<void>;
}

/** Builds and starts the agent and writes endpoint.json. */
export async function startAgent(config: AgentConfig, log: Logger, extra: Partial<AgentOptions> = {}): Promise<RunningAgent> {
  const consent = new ConsentService(config, { log: log.child({ component: 'consent' }) });
  const tokens: TokenProvider = extra.tokens ?? configTokenProvider(config);
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
    consent.close();
    throw e;
  }
  const endpointFile = agent.writeEndpointFile({});
  log.info({ endpoint: endpointFile, functions: agent.registry.ids().length }, 'agent ready');
  return {
    agent,
    consent,
    endpointFile,
    async stop() {
      await agent.stop();
      consent.close();
    },
  };
}
