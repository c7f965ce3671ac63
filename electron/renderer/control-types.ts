/**
 * What the window's pages send to the agent and get back. The control methods (names, params, results)
 * are the control API's one table (src/control/api.ts), imported here; what is the page's own is said
 * here: the notifications it listens for, the activity filters and `/health`.
 */
import type { CallRow as CallRowData, ConsentStatusView, LogLevel, SignInViewData } from '../../src/control/api.js';

export type { Answer, Candidate, Decision, FunctionView, GrantView, ParamsOf, PromptView, ResultOf, SettingsView } from '../../src/control/api.js';
/** One finished call of the audit trail (control.activity.list), any column readable by name (the CSV export). */
export type CallRow = CallRowData & { [column: string]: unknown };
export type { LogLevel };
/** The pause switch and the prompt queue (control.status, control/notification.status). */
export type ConsentStatus = ConsentStatusView;
/** The sign-in's state (control.signin.*, control/notification.signin). */
export type SignInView = SignInViewData;

/** The filters of control.activity.list. */
export interface ActivityFilter {
  function?: string;
  state?: string;
  requester?: string;
  since?: string;
  until?: string;
}

/** Why the bridge session stopped for good (`/health` → `stopped`). */
export interface StopAdvice {
  type: string;
  message: string;
  action?: string;
  action_key?: string;
}

/** The agent's `/health`. */
export interface Health {
  status?: string;
  bridge: string;
  version?: string;
  stopped?: StopAdvice;
}

/** The notifications the page listens for, with their params. */
export interface ControlEvents {
  'control/notification.prompt': unknown;
  'control/notification.prompt_withdrawn': unknown;
  'control/notification.status': ConsentStatus;
  'control/notification.signin': SignInView;
  'control/notification.grants': { kind: string };
  'control/notification.bridge': { bridge: string };
  /** The tray's own bridge event (Electron). */
  'tray/notification.bridge': { bridge: string };
}
