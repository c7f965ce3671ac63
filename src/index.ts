/**
 * The library surface of the AIOS Device core (package.json `main`), for embedders: start an agent or a
 * bridge, write handlers with the SDK, and name the control API's methods in types. Everything here is a
 * re-export of an existing module and nothing else. The Electron shell has its own entry, src/shell.ts
 * (the layering lint holds `electron/` to it); the commands use the modules themselves.
 */
export { startAgent, type RunningAgent, type AgentHooks } from './app/start-agent.js';
export type { AgentOptions } from './agent/agent.js';
export type { AgentConfig, AgentConfigFile } from './config/agent-config.js';
export { startBridge, type RunningBridge } from './app/start-bridge.js';
export type { BridgeConfig, BridgeConfigFile } from './config/bridge-config.js';
// The handler SDK (docs/handlers/authoring.md): defineHandler, defineFunction, fail, the call context...
export * from './sdk/index.js';
// The control API (PROTOCOL.md §8): its table's types, for a program that calls the agent's /rpc.
export type { ControlApi, ControlClient, ControlHandlers, ControlTable, ParamsOf, ResultOf } from './control/index.js';
