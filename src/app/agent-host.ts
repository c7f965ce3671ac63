/**
 * Keeps one agent running for `aios-device run` and the tray, and starts it again in-process when a
 * sign-in binds a new identity (the first sign-in of an agent that started signed out, or another
 * workspace or user): the journal and the bridge session belong to one identity, so a new one gets a new
 * agent. The local endpoint comes back on the same port with the same local token, so an open page
 * reconnects by itself.
 */
import { EventEmitter } from 'node:events';
import type { AgentConfig } from '../config/agent-config.js';
import type { Logger } from '../base/logger.js';
import type { AgentOptions } from '../agent/agent.js';
import { startAgent, type RunningAgent } from './start-agent.js';

/** The running agent, replaced when a new identity signs in. Emits `started` with each new one. */
export class AgentHost extends EventEmitter<{ started: [RunningAgent]; failed: [Error] }> {
  private running!: RunningAgent;
  private restarting: Promise<void> | undefined;

  private constructor(
    private readonly config: AgentConfig,
    private readonly log: Logger,
    private readonly extra: Partial<AgentOptions>,
  ) {
    super();
  }

  /** Starts the agent (signed in or not). */
  static async start(config: AgentConfig, log: Logger, extra: Partial<AgentOptions> = {}): Promise<AgentHost> {
    const host = new AgentHost(config, log, extra);
    host.running = await host.boot(config);
    return host;
  }

  /** The agent running now. */
  get current(): RunningAgent {
    return this.running;
  }

  /** Stops the agent (after a restart in progress). */
  async stop(): Promise<void> {
    await this.restarting;
    await this.running.stop();
  }

  private boot(config: AgentConfig): Promise<RunningAgent> {
    return startAgent(config, this.log, this.extra, { onNewIdentity: () => this.restart() });
  }

  private restart(): void {
    this.restarting ??= (async () => {
      const old = this.running;
      const http = old.endpoint?.info()?.http;
      // The same port again, so the page (and anything holding endpoint.json) finds the new agent.
      const port = http ? Number(new URL(http).port) : undefined;
      await old.stop();
      const config = port ? { ...this.config, local_endpoint: { ...this.config.local_endpoint, port } } : this.config;
      this.running = await this.boot(config);
      this.log.info({}, 'agent started again for the new sign-in');
      this.emit('started', this.running);
    })()
      .catch((e: unknown) => {
        this.log.error({ err: String(e) }, 'the agent could not start again after the sign-in; restart it');
        this.emit('failed', e as Error);
      })
      .finally(() => {
        this.restarting = undefined;
      });
  }
}
