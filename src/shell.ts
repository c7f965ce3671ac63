/**
 * The Electron shell's one entry into the core (electron/ imports src/ only through this module; the
 * layering lint's `shellDeepImport` rule enforces it): what the tray's main process, its IPC and its
 * window scheme use, and nothing else. Every line re-exports an existing module. The library surface
 * for other embedders is src/index.ts.
 */
export { AgentHost } from './app/agent-host.js';
export { SIGNIN_EVENT, type RunningAgent } from './app/start-agent.js';
export { personErrorText } from './app/error-text.js';
export type { BridgeStatus } from './agent/session.js';
export { createLogger } from './base/logger.js';
export type { Logger } from './base/logger.js';
export { loadAgentConfig, defaultDataDir, type AgentConfig } from './config/agent-config.js';
export { Catalogue, readCatalogueDir, toLocale, type Locale, type Messages } from './i18n/catalogue.js';
// The control API the window's IPC calls in-process (the same methods as the local endpoint's /rpc).
export { createControlMethods, CONTROL_EVENTS, type ControlMethods, type ControlContext } from './consent/index.js';
// The window's pages: where they are built, and the policy and content types they are served with.
export { RENDERER_CSP, UI_TYPES } from './endpoint/static-ui.js';
export { APP_VERSION, RENDERER_DIR } from './version.js';
