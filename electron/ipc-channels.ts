/**
 * Every IPC channel between the tray's main process and its window, in one map, and the typed API the
 * preload exposes to the page as `window.aiosDevice`. The page itself (electron/renderer/app.js) is the
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
  /** main → renderer: control notifications (`{ method, params }`). */
  event: 'aios:event',
} as const;

/** The request channels (everything but the event channel). */
export type InvokeChannel = Exclude<(typeof IPC)[keyof typeof IPC], typeof IPC.event>;

/** The control method (src/consent/control-api.ts) each request channel calls; `health` is answered by main. */
export const CONTROL_METHOD: Record<Exclude<InvokeChannel, typeof IPC.health>, string> = {
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
  health(): Promise<IpcResult<{ status: string; bridge: string; version: string; stopped?: { type: string; message: string; action: string } }>>;
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
  /** Calls `listener` for each control notification; returns the unsubscribe function. */
  onEvent(listener: (event: ControlEvent) => void): () => void;
}
