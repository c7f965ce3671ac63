/**
 * Consent: the policy, prompts, pause switch and audit trail (see docs/consent.md), each a piece of its
 * own: `PolicyGate` (the dispatcher's ConsentGate), `PromptQueue` with its providers, `PauseSwitch`, and
 * the audit trail (`AuditLog`, `auditTrail`, the dispatcher's CallObserver). src/app/consent-parts.ts
 * builds them; the local endpoint serves `createControlMethods(parts)` and broadcasts `parts.events`.
 */
export { PolicyGate, type PolicyGateParts } from './gate.js';
export { PauseSwitch } from './pause-switch.js';
export { PromptQueue } from './prompt-queue.js';
export { auditTrail } from './audit-trail.js';
export { ConsentStatusBoard, type ConsentStatus } from './consent-status.js';
export type { ProviderChoice } from './prompt-providers.js';
export { consentControlHandlers, createControlMethods, type ConsentControls, type ControlMethods, type ControlContext } from './control-api.js';
export { CONTROL_EVENTS, ControlEvents } from './control-events.js';
export { adminPolicyProblems, checkAdminPolicy, decidePolicy, type AdminPolicy, type AdminRule } from './policy.js';
export { redactArgs, summarize } from './redact.js';
