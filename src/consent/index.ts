/**
 * Consent: the policy, prompts, pause switch and audit trail (see docs/consent.md). The agent wires
 * `ConsentService` in as its ConsentGate and CallObserver, and the local endpoint serves
 * `createControlMethods(service)` and broadcasts `service.events`.
 */
export { ConsentService, type ConsentConfig, type ConsentServiceOptions, type ConsentStatus, type ProviderChoice } from './gate.js';
export { consentControlHandlers, createControlMethods, type ControlMethods, type ControlContext } from './control-api.js';
export { CONTROL_EVENTS, ControlEvents } from './control-events.js';
export { adminPolicyProblems, checkAdminPolicy, decidePolicy, type AdminPolicy, type AdminRule } from './policy.js';
export { redactArgs, summarize } from './redact.js';
