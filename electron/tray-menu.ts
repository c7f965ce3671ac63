/**
 * The tray's context menu as a template (plain data, so it is built the same way everywhere):
 * a status line, who is signed in where, Sign in… (while nobody is), Open, Pause/Resume and Quit.
 */
import type { MenuItemConstructorOptions } from 'electron';

/** What the menu shows. */
export interface TrayState {
  bridge: 'connected' | 'connecting' | 'offline';
  paused: boolean;
  promptsWaiting: number;
  /** Set when the agent is not running (bad config, fatal stop): shown instead of the bridge state. */
  problem?: string;
  /** Device kinds capturing now (media handler status: `camera`, `microphone`, `screen`). */
  capturing?: string[];
  /** Names of the capture pages attached as media providers (the tray's own hidden window among them). */
  captureProviders?: string[];
  /** The agent's sign-in (`control.signin.status`); absent for a device provisioned by its config. */
  signin?: TraySignIn;
}

/** The parts of the agent's sign-in state the menu shows. */
export interface TraySignIn {
  state: 'not_signed_in' | 'waiting' | 'signed_in' | 'denied' | 'expired' | 'failed';
  user_id?: string | undefined;
  workspace_id?: string | undefined;
  bridge_url?: string | undefined;
  user_code?: string | undefined;
}

/** Who is signed in where, or what the sign-in waits for: the menu's second line. */
export function traySignInLine(s: TraySignIn): string {
  switch (s.state) {
    case 'signed_in':
      return `Signed in as ${s.user_id ?? '?'} in ${s.workspace_id ?? '?'}${s.bridge_url ? ` at ${s.bridge_url}` : ''}`;
    case 'waiting':
      return `Signing in: waiting for approval${s.user_code ? ` of code ${s.user_code}` : ''}`;
    case 'denied':
      return 'Not signed in (the sign-in was denied)';
    case 'expired':
      return 'Not signed in (the code expired)';
    case 'failed':
      return 'Not signed in (the sign-in failed)';
    default:
      return 'Not signed in';
  }
}

/** What the menu items do. */
export interface TrayActions {
  open(): void;
  pause(): void;
  resume(): void;
  quit(): void;
}

/** One line for the tooltip and the menu's first (disabled) item. */
export function trayStatusLine(s: TrayState): string {
  if (s.problem) return `AIOS Device: ${s.problem}`;
  if (s.signin && s.signin.state !== 'signed_in') return `AIOS Device: ${s.signin.state === 'waiting' ? 'signing in' : 'sign-in needed'}`;
  const parts = [s.paused ? 'paused' : s.bridge];
  if (s.promptsWaiting > 0) parts.push(`${s.promptsWaiting} waiting for you`);
  for (const kind of new Set(s.capturing ?? [])) parts.push(`${kind} in use`);
  return `AIOS Device: ${parts.join(', ')}`;
}

/** The menu template for `Menu.buildFromTemplate`. */
export function trayMenuTemplate(s: TrayState, a: TrayActions): MenuItemConstructorOptions[] {
  const running = s.problem === undefined;
  const signedOut = s.signin !== undefined && s.signin.state !== 'signed_in';
  return [
    { label: trayStatusLine(s), enabled: false },
    ...(s.signin ? [{ label: traySignInLine(s.signin), enabled: false }] : []),
    ...(s.captureProviders?.length ? [{ label: `Capture provider: ${s.captureProviders.join(', ')}`, enabled: false }] : []),
    { type: 'separator' },
    // Signing in happens in the window: the first item says so while nobody is signed in.
    ...(signedOut ? [{ label: 'Sign in…', click: () => a.open() }] : []),
    { label: 'Open', click: () => a.open(), enabled: running },
    s.paused
      ? { label: 'Resume', click: () => a.resume(), enabled: running }
      : { label: 'Pause', click: () => a.pause(), enabled: running },
    { type: 'separator' },
    { label: 'Quit', click: () => a.quit() },
  ];
}
