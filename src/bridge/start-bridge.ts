/**
 * Starts a complete reference bridge from its config: the one place where its parts are wired.
 */
import type { BridgeConfig } from '../config/bridge-config.js';
import type { Logger } from '../sdk/index.js';
import { BridgeServer } from './server.js';

/** A running bridge. */
export interface RunningBridge {
  server: BridgeServer;
  url: string;
  stop(): Promise<void>;
}

export async function startBridge(config: BridgeConfig, log: Logger): Promise<RunningBridge> {
  const server = new BridgeServer(config, { log });
  const url = await server.start();
  return { server, url, stop: () => server.stop() };
}
