/**
 * The tray's context menu as a template (plain data, so it is built the same way everywhere):
 * a status line, Open, Pause/Resume and Quit.
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
  const parts = [s.paused ? 'paused' : s.bridge];
  if (s.promptsWaiting > 0) parts.push(`${s.promptsWaiting} waiting for you`);
  for (const kind of new Set(s.capturing ?? [])) parts.push(`${kind} in use`);
  return `AIOS Device: ${parts.join(', ')}`;
}

/** The menu template for `Menu.buildFromTemplate`. */
export function trayMenuTemplate(s: TrayState, a: TrayActions): MenuItemConstructorOptions[] {
  const running = s.problem === undefined;
  return [
    { label: trayStatusLine(s), enabled: false },
    ...(s.captureProviders?.length ? [{ label: `Capture provider: ${s.captureProviders.join(', ')}`, enabled: false }] : []),
    { type: 'separator' },
    { label: 'Open', click: () => a.open(), enabled: running },
    s.paused
      ? { label: 'Resume', click: () => a.resume(), enabled: running }
      : { label: 'Pause', click: () => a.pause(), enabled: running },
    { type: 'separator' },
    { label: 'Quit', click: () => a.quit() },
  ];
}
