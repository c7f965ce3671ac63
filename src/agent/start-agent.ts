/**
 * Starts a complete agent from a config: the one place where subsystems are wired together, used by
 * `aios-device run`, the demo and end-to-end tests.
 */
import type { AgentConfig } from '../config/agent-config.js';
import type { Logger } from '../sdk/index.js';
import { Agent, type AgentOptions } from './agent.js';

/** A running agent and how to stop it. */
export interface RunningAgent {
  agent: Agent;
  endpointFile: string;
  stop(): Promise<void>;
}

/** Builds and starts the agent and writes endpoint.json. */
export async function startAgent(config: AgentConfig, log: Logger, extra: Partial<AgentOptions> = {}): Promise<RunningAgent> {
  const agent = new Agent(config, { log, ...extra });
  agent.onFatal = (f) => log.error({ type: f.type }, `bridge session stopped: ${f.message}`);
  await agent.start();
  const endpointFile = agent.writeEndpointFile({});
  log.info({ endpoint: endpointFile, functions: agent.registry.ids().length }, 'agent ready');
  return {
    agent,
    endpointFile,
    stop: () => agent.stop(),
  };
}
