/**
 * Main-process IPC handlers: each request channel checks who sent it (the top frame of a window showing
 * our own renderer URL). A control method's channel (one per method of the control API's table the window
 * may call) passes its argument unchanged to the agent's method in-process, which checks it (the one
 * check, src/control/server.ts); the shell's own channels check theirs here.
 * Only type imports from `electron`, so this module runs (and is tested) in plain Node.
 */
import type { ControlContext, ControlMethods } from '../src/shell.js';
import { CONTROL_API, type ControlTable } from '../src/control/api.js';
import { windowChannels } from '../src/control/ipc.js';
import { SHELL_IPC as IPC, type IpcResult, type ShellChannel } from './ipc-channels.js';

/** The parts of a `WebContents` this module uses. */
export interface IpcSender {
  send(channel: string, payload: unknown): void;
  once(event: 'destroyed', listener: () => void): unknown;
  isDestroyed(): boolean;
}

/** The parts of an `IpcMainInvokeEvent` this module uses. */
export interface IpcInvokeEvent {
  sender: IpcSender;
  senderFrame: { url: string; parent: unknown } | null;
}

/** The parts of `ipcMain` this module uses. */
export interface IpcMainLike {
  handle(channel: string, listener: (event: IpcInvokeEvent, arg?: unknown) => Promise<IpcResult>): void;
  removeHandler(channel: string): void;
}

/** What the handlers need from the running agent and the shell. */
export interface IpcDeps {
  /** The agent's control methods by wire name (`running.control`). */
  methods: ControlMethods;
  /** The control API's table the channels are derived from (a test passes an extended one). */
  table?: ControlTable;
  /** Same shape as the local endpoint's `GET /health`. */
  health(): { status: 'ok'; bridge: string; version: string; stopped?: { type: string; message: string; action: string; action_key?: string } };
  /** True for a URL of our own renderer (see renderer-protocol.ts). */
  isTrustedUrl(url: string): boolean;
  /** Told about refused senders; never given argument values. */
  onRefused?(channel: string, url: string): void;
  /** Opens `url` in the default browser when it is the sign-in's verification address; false when refused. */
  openExternal?(url: string): boolean | Promise<boolean>;
  /** What only the shell can do (main.ts wires Electron's dialog, login items and shell); absent: unavailable. */
  shell?: ShellOps;
}

/**
 * True when `url` may be opened outside: exactly the verification address of the sign-in waiting now,
 * and http(s). The page cannot use "Open browser" to open anything else.
 */
export function isSignInAddress(url: string, signin: { state: string; verification_uri_complete?: string | undefined } | undefined): boolean {
  if (signin?.state !== 'waiting' || url !== signin.verification_uri_complete) return false;
  try {
    return ['http:', 'https:'].includes(new URL(url).protocol);
  } catch {
    return false;
  }
}

/** The shell's own operations behind the Settings screen. */
export interface ShellOps {
  /** The native folder picker; null when the person cancels. */
  pickFolder(): Promise<string | null>;
  getLoginItem(): Promise<{ supported: boolean; enabled: boolean }>;
  setLoginItem(enabled: boolean): Promise<{ supported: boolean; enabled: boolean }>;
  /** Opens the logs folder; resolves with the folder opened. */
  openLogs(): Promise<{ opened: string }>;
}

/** Thrown by a validator; becomes `{ ok: false, error: { type: 'invalid_arguments' } }`. */
class BadArgument extends Error {}

type Validator = (arg: unknown) => Record<string, unknown>;

const record = (arg: unknown): Record<string, unknown> => {
  if (arg === undefined) return {};
  if (arg === null || typeof arg !== 'object' || Array.isArray(arg)) throw new BadArgument('The argument must be an object.');
  return arg as Record<string, unknown>;
};

const only = (p: Record<string, unknown>, keys: string[]): Record<string, unknown> => {
  const extra = Object.keys(p).filter((k) => !keys.includes(k));
  if (extra.length) throw new BadArgument(`Unexpected field ${JSON.stringify(extra[0])}.`);
  return p;
};

const none: Validator = (arg) => only(record(arg), []);

/** The shell channels that take an argument other than none, with its check. */
type ShellInvokeChannel = ShellChannel | typeof IPC.openExternal;

/** Argument checks of the shell's own channels (the control methods check their own params). */
const SHELL_VALIDATORS: Record<ShellInvokeChannel, Validator> = {
  [IPC.health]: none,
  [IPC.openExternal]: (arg) => {
    const p = only(record(arg), ['url']);
    if (typeof p['url'] !== 'string' || p['url'].length > 2000) throw new BadArgument('url must be a string of at most 2000 characters.');
    return { url: p['url'] };
  },
  [IPC.pickFolder]: none,
  [IPC.getLoginItem]: none,
  [IPC.setLoginItem]: (arg) => {
    const p = only(record(arg), ['enabled']);
    if (typeof p['enabled'] !== 'boolean') throw new BadArgument('enabled must be true or false.');
    return { enabled: p['enabled'] };
  },
  [IPC.openLogs]: none,
};

/** Runs one of the shell's own operations. */
async function runShell(channel: Exclude<ShellChannel, typeof IPC.health>, shell: ShellOps, params: Record<string, unknown>): Promise<unknown> {
  switch (channel) {
    case IPC.pickFolder:
      return shell.pickFolder();
    case IPC.getLoginItem:
      return shell.getLoginItem();
    case IPC.setLoginItem:
      return shell.setLoginItem(params['enabled'] === true);
    case IPC.openLogs:
      return shell.openLogs();
  }
}

/** A thrown error as plain data: its wire `type` when it has one, and no private detail otherwise. */
function toPlainError(e: unknown): { type: string; message: string } {
  if (e instanceof BadArgument) return { type: 'invalid_arguments', message: e.message };
  const err = e as { type?: unknown; code?: unknown; message?: unknown };
  if (typeof err?.type === 'string' && typeof err.message === 'string') return { type: err.type, message: err.message };
  // RpcError with a typed `data` (the sign-in methods: `signed_in`, `invalid_arguments`, …).
  const dataType = (err as { data?: { type?: unknown } })?.data?.type;
  if (typeof dataType === 'string' && typeof err.message === 'string') return { type: dataType, message: err.message };
  // RpcError from a control method's own parameter check (-32602): its message names the field, not a value.
  if (err?.code === -32602 && typeof err.message === 'string') return { type: 'invalid_arguments', message: err.message };
  return { type: 'execution_failed', message: 'The agent could not do that.' };
}

/** The registered handlers: forward control notifications to attached windows, or remove them all. */
export interface IpcRegistration {
  /** Sends a control notification to every window that has called the agent and is still open. */
  broadcast(method: string, params: unknown): void;
  /** Number of windows attached as a UI (for the tray's state). */
  attached(): number;
  dispose(): void;
}

/** Registers one handler per shell channel of ipc-channels.ts and per control method the window may call. */
export function registerIpc(ipcMain: IpcMainLike, deps: IpcDeps): IpcRegistration {
  // One context per window, so the consent service counts each window once as an attached UI, and
  // forgets it when the window is destroyed.
  const contexts = new Map<IpcSender, ControlContext>();
  const contextOf = (sender: IpcSender): ControlContext => {
    let ctx = contexts.get(sender);
    if (!ctx) {
      const closers: (() => void)[] = [];
      ctx = {
        authenticated: true,
        notify: (method, params) => {
          if (!sender.isDestroyed()) sender.send(IPC.event, { method, params });
        },
        onClose: (cb) => closers.push(cb),
      };
      contexts.set(sender, ctx);
      sender.once('destroyed', () => {
        contexts.delete(sender);
        for (const cb of closers.splice(0)) cb();
      });
    }
    return ctx;
  };

  const control = windowChannels(deps.table ?? CONTROL_API);
  const channels = [...(Object.keys(SHELL_VALIDATORS) as ShellInvokeChannel[]), ...control.keys()];
  for (const channel of channels) {
    ipcMain.handle(channel, async (event, arg): Promise<IpcResult> => {
      const frame = event.senderFrame;
      // Only the top frame of our own page: not an iframe, not a page the window was tricked into showing.
      if (!frame || frame.parent !== null || !deps.isTrustedUrl(frame.url)) {
        deps.onRefused?.(channel, frame?.url ?? '(no frame)');
        return { ok: false, error: { type: 'unauthorized', message: 'This page may not talk to the agent.' } };
      }
      try {
        const spec = control.get(channel);
        if (spec) {
          const method = deps.methods[spec.method];
          if (!method) return { ok: false, error: { type: 'device_unavailable', message: 'The agent does not offer this operation.' } };
          return { ok: true, value: await method(arg ?? {}, contextOf(event.sender)) };
        }
        const shellChannel = channel as ShellInvokeChannel;
        const params = SHELL_VALIDATORS[shellChannel](arg);
        if (shellChannel === IPC.health) return { ok: true, value: deps.health() };
        if (shellChannel === IPC.openExternal) {
          const opened = (await deps.openExternal?.(params['url'] as string)) ?? false;
          return opened ? { ok: true, value: { opened } } : { ok: false, error: { type: 'permission_denied', message: 'Only the sign-in address can be opened.' } };
        }
        if (!deps.shell) return { ok: false, error: { type: 'device_unavailable', message: 'The shell does not offer this operation.' } };
        return { ok: true, value: await runShell(shellChannel, deps.shell, params) };
      } catch (e) {
        return { ok: false, error: toPlainError(e) };
      }
    });
  }

  return {
    broadcast(method, params) {
      for (const ctx of contexts.values()) ctx.notify?.(method, params);
    },
    attached: () => contexts.size,
    dispose() {
      for (const c of channels) ipcMain.removeHandler(c);
      contexts.clear();
    },
  };
}
