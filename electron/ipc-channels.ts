/**
 * Every IPC channel between the tray's main process and its window, in one map, and the typed API the
 * preload exposes to the page as `window.aiosDevice`. The control methods' channels and functions are
 * derived from the control API's table (src/control/); only the shell's own are listed here. The page
 * itself (electron/renderer/app.ts) is the same web page a plain browser loads from the agent's local
 * endpoint; this API is only its transport.
 */
import { CONTROL_API, type Answer } from '../src/control/api.js';
import { controlChannel, type IpcResult, type PreloadControlApi, type WindowKey } from '../src/control/ipc.js';

/** The shell's own channels (not control methods), and the one main → renderer event channel. */
export const SHELL_IPC = {
  health: 'aios:health',
  /** Opens the sign-in's verification address in the default browser (only that address; main checks). */
  openExternal: 'aios:shell.openExternal',
  pickFolder: 'aios:shell.pick_folder',
  getLoginItem: 'aios:shell.login_item.get',
  setLoginItem: 'aios:shell.login_item.set',
  openLogs: 'aios:shell.open_logs',
  /** main → renderer: control notifications (`{ method, params }`). */
  event: 'aios:event',
} as const;

/**
 * Channel names: the shell's own, and one per control method the window may call, derived from the
 * control API's table (src/control/ipc.ts: `aios:<wire name>`, under the table's key).
 */
export const IPC: typeof SHELL_IPC & { readonly [K in WindowKey]: string } = {
  ...SHELL_IPC,
  ...(Object.fromEntries(Object.entries(CONTROL_API).filter(([, spec]) => spec.window).map(([key, spec]) => [key, controlChannel(spec)])) as { [K in WindowKey]: string }),
};

/** The channels main answers itself (the shell's own operations), not a control method. */
export const SHELL_CHANNELS = [SHELL_IPC.health, SHELL_IPC.pickFolder, SHELL_IPC.getLoginItem, SHELL_IPC.setLoginItem, SHELL_IPC.openLogs] as const;
/** One of SHELL_CHANNELS. */
export type ShellChannel = (typeof SHELL_CHANNELS)[number];

export type { Answer, IpcResult };

/** A control notification forwarded to the page. */
export interface ControlEvent {
  method: string;
  params: unknown;
}

/** `window.aiosDevice`: the control methods the window may call (`control`), the shell's own operations, and events. Never `ipcRenderer`. */
export interface DeviceApi {
  /** One function per control method the window may call, derived from the control API's table. */
  control: PreloadControlApi;
  health(): Promise<IpcResult<{ status: string; bridge: string; version: string; stopped?: { type: string; message: string; action: string; action_key?: string } }>>;
  /** Opens the sign-in's verification address in the default browser. */
  openExternal(url: string): Promise<IpcResult>;
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
