/**
 * Every IPC channel between the tray's main process and its window, in one map, and the typed API the
 * preload exposes to the page as `window.aiosDevice`. The page itself (electron/renderer/app.ts) is the
 * same web page a plain browser loads from the agent's local endpoint; this API is only its transport.
 */

/** Channel names: renderer → main requests (`invoke`), and the one main → renderer event channel. */
export const IPC = {
  health: 'aios:health',
  status: 'aios:control.status',
  pause: 'aios:control.pause',
  resume: 'aios:control.resume',
  listPrompts: 'aios:control.prompts.list',
  promptArguments: 'aios:control.prompts.arguments',
  answerPrompt: 'aios:control.prompts.answer',
  setFocused: 'aios:control.ui.focus',
  listDecisions: 'aios:control.decisions.list',
  revokeDecision: 'aios:control.decisions.revoke',
  listActivity: 'aios:control.activity.list',
  signinStatus: 'aios:control.signin.status',
  signinStart: 'aios:control.signin.start',
  signinCancel: 'aios:control.signin.cancel',
  signout: 'aios:control.signout',
  /** Opens the sign-in's verification address in the default browser (only that address; main checks). */
  openExternal: 'aios:shell.openExternal',
  // Settings: grants, functions, log level, About (control methods), and what only the shell can do.
  listGrants: 'aios:control.grants.list',
  addGrant: 'aios:control.grants.add',
  removeGrant: 'aios:control.grants.remove',
  grantCandidates: 'aios:control.grants.candidates',
  listFunctions: 'aios:control.functions.list',
  setFunction: 'aios:control.functions.set',
  getSettings: 'aios:control.settings.get',
  setLogLevel: 'aios:control.settings.log_level',
  pickFolder: 'aios:shell.pick_folder',
  getLoginItem: 'aios:shell.login_item.get',
  setLoginItem: 'aios:shell.login_item.set',
  openLogs: 'aios:shell.open_logs',
  /** main → renderer: control notifications (`{ method, params }`). */
  event: 'aios:event',
} as const;

/** The request channels (everything but the event channel). */
export type InvokeChannel = Exclude<(typeof IPC)[keyof typeof IPC], typeof IPC.event>;

/** The channels main answers itself (the shell's own operations), not a control method. */
export const SHELL_CHANNELS = [IPC.health, IPC.pickFolder, IPC.getLoginItem, IPC.setLoginItem, IPC.openLogs] as const;
/** One of SHELL_CHANNELS. */
export type ShellChannel = (typeof SHELL_CHANNELS)[number];

/** The control method (src/consent/control-api.ts, src/agent/settings-methods.ts) each other request channel calls; `openExternal` is answered by main. */
export const CONTROL_METHOD: Record<Exclude<InvokeChannel, ShellChannel | typeof IPC.openExternal>, string> = {
  [IPC.status]: 'control.status',
  [IPC.pause]: 'control.pause',
  [IPC.resume]: 'control.resume',
  [IPC.listPrompts]: 'control.prompts.list',
  [IPC.promptArguments]: 'control.prompts.arguments',
  [IPC.answerPrompt]: 'control.prompts.answer',
  [IPC.setFocused]: 'control.ui.focus',
  [IPC.listDecisions]: 'control.decisions.list',
  [IPC.revokeDecision]: 'control.decisions.revoke',
  [IPC.listActivity]: 'control.activity.list',
  [IPC.signinStatus]: 'control.signin.status',
  [IPC.signinStart]: 'control.signin.start',
  [IPC.signinCancel]: 'control.signin.cancel',
  [IPC.signout]: 'control.signout',
  [IPC.listGrants]: 'control.grants.list',
  [IPC.addGrant]: 'control.grants.add',
  [IPC.removeGrant]: 'control.grants.remove',
  [IPC.grantCandidates]: 'control.grants.candidates',
  [IPC.listFunctions]: 'control.functions.list',
  [IPC.setFunction]: 'control.functions.set',
  [IPC.getSettings]: 'control.settings.get',
  [IPC.setLogLevel]: 'control.settings.log_level',
};

/**
 * What every request resolves to. Errors cross the process boundary as plain data with their wire
 * `type` (STYLE.md: never rely on `instanceof` across IPC); the page turns them back into errors.
 */
export type IpcResult<T = unknown> = { ok: true; value: T } | { ok: false; error: { type: string; message: string } };

/** The answers a prompt can take (control.prompts.answer). */
export type Answer = 'allow_once' | 'allow_remember' | 'deny' | 'deny_remember' | 'close';

/** What the activity screen asks for (the fields of control.activity.list). */
export interface ActivityFilter {
  limit?: number;
  function?: string;
  state?: string;
  requester?: string;
  since?: string;
  until?: string;
}

/** A control notification forwarded to the page. */
export interface ControlEvent {
  method: string;
  params: unknown;
}

/** `window.aiosDevice`: one function per operation, nothing else (never `ipcRenderer`). */
export interface DeviceApi {
  health(): Promise<IpcResult<{ status: string; bridge: string; version: string; stopped?: { type: string; message: string; action: string; action_key?: string } }>>;
  status(): Promise<IpcResult>;
  pause(): Promise<IpcResult>;
  resume(): Promise<IpcResult>;
  listPrompts(): Promise<IpcResult>;
  promptArguments(promptId: string): Promise<IpcResult>;
  answerPrompt(promptId: string, answer: Answer, scope?: 'session' | 'always'): Promise<IpcResult>;
  setFocused(focused: boolean): Promise<IpcResult>;
  listDecisions(): Promise<IpcResult>;
  revokeDecision(id: number): Promise<IpcResult>;
  /** `control.activity.list` with its filters (function, state, requester, since, until) and a limit. */
  listActivity(filter: ActivityFilter): Promise<IpcResult>;
  signinStatus(): Promise<IpcResult>;
  /** Starts the device sign-in; without `bridgeUrl` the config's bridge. */
  signinStart(bridgeUrl?: string): Promise<IpcResult>;
  signinCancel(): Promise<IpcResult>;
  signout(): Promise<IpcResult>;
  /** Opens the sign-in's verification address in the default browser. */
  openExternal(url: string): Promise<IpcResult>;
  listGrants(): Promise<IpcResult>;
  /** `entry`: one entry as `grants.<kind>` takes it. */
  addGrant(kind: string, entry: unknown): Promise<IpcResult>;
  removeGrant(kind: string, id: string): Promise<IpcResult>;
  grantCandidates(kind: string): Promise<IpcResult>;
  listFunctions(): Promise<IpcResult>;
  setFunction(id: string, enabled: boolean): Promise<IpcResult>;
  getSettings(): Promise<IpcResult>;
  setLogLevel(level: string): Promise<IpcResult>;
  /** The native folder picker: the chosen folder, or null when cancelled. */
  pickFolder(): Promise<IpcResult<string | null>>;
  /** Start at login: whether it is on, and whether this OS can do it. */
  getLoginItem(): Promise<IpcResult<{ supported: boolean; enabled: boolean }>>;
  setLoginItem(enabled: boolean): Promise<IpcResult<{ supported: boolean; enabled: boolean }>>;
  /** Opens the logs folder in the file manager. */
  openLogs(): Promise<IpcResult<{ opened: string }>>;
  /** Calls `listener` for each control notification; returns the unsubscribe function. */
  onEvent(listener: (event: ControlEvent) => void): () => void;
}
