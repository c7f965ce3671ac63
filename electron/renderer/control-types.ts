/**
 * What the window's pages send to the agent and get back: the control methods they call (names, params,
 * results, as src/consent/control-api.ts, src/agent/settings-methods.ts and src/agent/sign-in.ts answer
 * them), the notifications they listen for, and `/health`. Only the fields the pages read are typed.
 * The page is a web page and imports nothing of src/ (eslint.config.js), so these are said here; when the
 * control API has its one table in src/control/ (issue 29 §1), this map is derived from it.
 */

/** A risk flag set of a function (its descriptor's `risk`). */
export interface Risk {
  destructive?: boolean;
  physical?: boolean;
  read_only?: boolean;
  idempotent?: boolean;
}

/** A prompt waiting for the person (control.prompts.list). */
export interface PromptView {
  prompt_id: string;
  call_id: string;
  function_id: string;
  function_name: string;
  sentence: string;
  /** Who the runtime says it is: a claim. */
  requester: { kind?: string; id?: string; name?: string } | null;
  /** The runtime the bridge attested (protocol 1.2 §6.1); null on a 1.1 bridge. */
  runtime?: { id: string; name: string } | null;
  permission_level: string;
  risk: Risk | null;
  resources?: { kind: string; id: string; label?: string }[];
  remember_any: boolean;
  rememberable: boolean;
  expires_at: string;
  /** True for the prompt on screen. */
  active: boolean;
  position: number;
}

/** The answers a prompt can take. */
export type Answer = 'allow_once' | 'allow_remember' | 'deny' | 'deny_remember' | 'close';

/** A remembered decision (control.decisions.list). */
export interface Decision {
  id: number;
  effect: 'allow' | 'deny';
  function_id: string;
  resource: string;
  scope: 'session' | 'always';
}

/** One finished call of the audit trail (control.activity.list). */
export interface CallRow {
  call_id: string;
  function_id: string;
  state: string;
  error_type: string | null;
  decision: string | null;
  decided_by: string | null;
  remembered: boolean;
  requester_kind: string | null;
  requester_id: string | null;
  requester_name: string | null;
  workspace_id: string | null;
  user_id: string | null;
  sentence?: string;
  resources: { kind: string; label: string }[] | null;
  args_summary: unknown;
  accepted_at: string | null;
  finished_at: string;
  duration_ms: number | null;
  [column: string]: unknown;
}

/** The filters of control.activity.list. */
export interface ActivityFilter {
  function?: string;
  state?: string;
  requester?: string;
  since?: string;
  until?: string;
}

/** The pause switch and the prompt queue (control.status, control/notification.status). */
export interface ConsentStatus {
  paused: boolean;
  prompts_waiting?: number;
}

/** The sign-in's state (control.signin.*, control/notification.signin). */
export interface SignInView {
  state: 'not_signed_in' | 'waiting' | 'signed_in' | 'denied' | 'expired' | 'failed' | string;
  bridge_url?: string;
  user_code?: string;
  verification_uri?: string;
  verification_uri_complete?: string;
  qr?: string;
  expires_at?: string;
  workspace_id?: string;
  user_id?: string;
  error?: { code: string; message: string };
  /** control.signout: false when the bridge could not be told. */
  revoked?: boolean;
}

/** A shared folder or device (control.grants.list). */
export interface GrantView {
  kind: string;
  id: string;
  alias?: string;
  access?: 'read' | 'read_write';
  source: string;
}

/** A device Settings can offer for a kind (control.grants.candidates). */
export interface Candidate {
  id: string;
  label?: string;
  alias?: string;
}

/** A function as Settings shows it (control.functions.list). */
export interface FunctionView {
  id: string;
  name: string;
  permission_level: string;
  enabled: boolean;
  admin_disabled: boolean;
}

/** Settings → General and About (control.settings.get). */
export interface SettingsView {
  version: string;
  /** The version the bridge session speaks; null with no session. */
  protocol_version: string | null;
  /** The newest version this client offers. */
  protocol_offered: string;
  data_dir: string;
  log_file: string | null;
  log_level: string | null;
  log_levels: string[];
  grant_id_keys?: Record<string, string>;
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

type None = Record<never, never>;

/** Each control method the pages call: its params and its result. */
export interface ControlApi {
  'control.status': { params: None; result: ConsentStatus };
  'control.pause': { params: None; result: ConsentStatus };
  'control.resume': { params: None; result: ConsentStatus };
  'control.prompts.list': { params: None; result: { prompts: PromptView[] } };
  'control.prompts.arguments': { params: { prompt_id: string }; result: { prompt_id: string; arguments: unknown } };
  'control.prompts.answer': { params: { prompt_id: string; answer: Answer; scope?: 'session' | 'always'; resource_scope?: 'shown' | 'any' }; result: { ok: boolean } };
  'control.prompts.attach': { params: { name: string }; result: { answerer_id: string; heartbeat_ms: number } };
  'control.prompts.heartbeat': { params: { answerer_id: string }; result: { ok: boolean } };
  'control.ui.focus': { params: { focused: boolean }; result: { ok: boolean } };
  'control.decisions.list': { params: None; result: { decisions: Decision[] } };
  'control.decisions.revoke': { params: { id: number }; result: { revoked: boolean } };
  'control.activity.list': { params: ActivityFilter & { limit?: number }; result: { calls: CallRow[] } };
  'control.signin.status': { params: None; result: SignInView };
  'control.signin.start': { params: { bridge_url?: string }; result: SignInView };
  'control.signin.cancel': { params: None; result: SignInView };
  'control.signout': { params: None; result: SignInView };
  'control.grants.list': { params: None; result: { kinds: string[]; grants: Record<string, GrantView[]>; ceilings?: Record<string, { id: string; alias?: string }[]> } };
  'control.grants.add': { params: { kind: string; entry: unknown }; result: { grant: GrantView } };
  'control.grants.remove': { params: { kind: string; id: string }; result: { removed: boolean } };
  'control.grants.candidates': { params: { kind: string }; result: { kind: string; candidates: Candidate[] } };
  'control.functions.list': { params: None; result: { functions: FunctionView[] } };
  'control.functions.set': { params: { id: string; enabled: boolean }; result: { function: { enabled: boolean } } };
  'control.settings.get': { params: None; result: SettingsView };
  'control.settings.log_level': { params: { level: string }; result: { log_level: string | null } };
}

/** A control method's name. */
export type ControlMethod = keyof ControlApi;
/** The params of `M`. */
export type ParamsOf<M extends ControlMethod> = ControlApi[M]['params'];
/** The result of `M`. */
export type ResultOf<M extends ControlMethod> = ControlApi[M]['result'];

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
