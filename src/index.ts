/**
 * The public entry of the AIOS Device core (package.json `main`), for embedders. Everything here is a
 * re-export of an existing module and nothing else. The Electron shell has its own entry, src/shell.ts
 * (the layering lint holds `electron/` to it).
 */
export { Agent, configTokenProvider, type AgentOptions, type TokenProvider } from './agent/agent.js';
export { startAgent, SIGNIN_EVENT, type RunningAgent } from './app/start-agent.js';
export { AgentHost } from './app/agent-host.js';
export { personErrorText } from './app/error-text.js';
export { SignInService, signInMethods, type SignInView, type SignInState } from './agent/sign-in.js';
export type { BridgeStatus, FatalStop } from './agent/session.js';
export { createLogger, silentLogger } from './base/logger.js';
export { loadAgentConfig, normalizeAgentConfig, defaultDataDir, type AgentConfig, type AgentConfigFile } from './config/agent-config.js';
export { ConfigError } from './config/load.js';
export { LocalEndpoint, LOCAL_RPC_SUBPROTOCOL, type BridgeState, type EndpointInfo, type LocalEndpointOptions } from './endpoint/local-endpoint.js';
export { findRunningAgent, callLocal } from './endpoint/local-client.js';
export { RENDERER_CSP, UI_TYPES } from './endpoint/static-ui.js';
export { ConsentService, createControlMethods, CONTROL_EVENTS, type ConsentStatus, type ControlMethods, type ControlContext } from './consent/index.js';
// The control API (PROTOCOL.md §8): its one table, the typed client and the server side's types.
export { CONTROL_API, defineControlMethod, controlClient, serveControl, type ControlApi, type ControlClient, type ControlHandlers, type ControlTable, type ParamsOf, type ResultOf } from './control/index.js';
export { ANSWER_KINDS, type PromptAnswerKind, type PromptView } from './consent/prompt.js';
export type { DecisionScope } from './consent/decisions-store.js';
export { WireError, RpcError } from './protocol/errors.js';
export { APP_VERSION, PROJECT_ROOT } from './version.js';
export type { Logger } from './base/logger.js';
export { Catalogue, readCatalogueDir, toLocale, localeFromEnv, type Locale, type Messages } from './i18n/catalogue.js';
