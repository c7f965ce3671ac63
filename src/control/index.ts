/**
 * The control API (PROTOCOL.md §8): the table (api.ts), the agent's side (server.ts), the typed client
 * (client.ts) and the Electron IPC derivation (ipc.ts). The window's page and preload import api.ts,
 * client.ts and ipc.ts directly (plain modules); server.ts is the agent's.
 */
export * from './api.js';
export * from './client.js';
export * from './ipc.js';
export * from './server.js';
