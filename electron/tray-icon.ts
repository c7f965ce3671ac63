/**
 * Which tray icon shows, from what the agent reports. Plain data in, a state name and file names out, so
 * it is tested without Electron (test/electron/tray-icon.test.ts); main.ts only loads the file it names.
 * The pictures are drawn by scripts/make-tray-icons.ts: each state has its own badge shape (not only its
 * own colour), so the states differ in macOS's monochrome template images and for colour-blind eyes.
 */

/** The states a person can tell apart at a glance, most urgent first. */
export const TRAY_ICON_STATES = ['attention', 'capturing', 'paused', 'offline', 'connecting', 'busy', 'connected'] as const;
/** One of TRAY_ICON_STATES. */
export type TrayIconState = (typeof TRAY_ICON_STATES)[number];

/** Why the icon asks for attention (several can hold at once; the tooltip names the first). */
export type AttentionReason = 'prompt' | 'sign_in' | 'update' | 'stopped';

/** What the icon is chosen from (main.ts fills it from the agent's events and `control.status`). */
export interface TrayIconInputs {
  bridge: 'connected' | 'connecting' | 'offline';
  paused: boolean;
  promptsWaiting: number;
  /** Calls executing now (the dispatcher's active count). */
  callsRunning?: number;
  /** Device kinds capturing now (`control.status` → `handlers.media.capturing[].kind`). */
  capturing?: readonly string[];
  /** The session stopped for good because the sign-in is missing, expired, revoked or replaced. */
  signInNeeded?: boolean;
  /** The bridge refused this client version (`client_outdated`). */
  updateRequired?: boolean;
  /** The agent is not running at all (bad config, another fatal stop). */
  problem?: string;
}

/** Why the user is needed now, most urgent first; empty when nothing waits on them. */
export function attentionReasons(s: TrayIconInputs): AttentionReason[] {
  const out: AttentionReason[] = [];
  if (s.promptsWaiting > 0) out.push('prompt');
  if (s.signInNeeded) out.push('sign_in');
  if (s.updateRequired) out.push('update');
  if (s.problem !== undefined && !s.signInNeeded && !s.updateRequired) out.push('stopped');
  return out;
}

/**
 * The one state the icon shows. Attention beats everything (a call waits on the user, or nothing works
 * until they act); a running capture beats the connection states (the user must always see that the
 * camera, microphone or screen is in use); paused beats offline (pausing is the user's own choice and
 * explains why nothing runs); busy shows only while connected.
 */
export function trayIconState(s: TrayIconInputs): TrayIconState {
  if (attentionReasons(s).length) return 'attention';
  if ((s.capturing?.length ?? 0) > 0) return 'capturing';
  if (s.paused) return 'paused';
  if (s.bridge === 'offline') return 'offline';
  if (s.bridge === 'connecting') return 'connecting';
  if ((s.callsRunning ?? 0) > 0) return 'busy';
  return 'connected';
}

/**
 * The icon file (in resources/icons) for a state: macOS gets the black-on-transparent template image
 * (the menu bar recolours it for light and dark), the other systems the coloured one (legible on light
 * and dark panels: each badge has a white rim around a saturated fill). Electron picks `@2x` itself.
 */
export function trayIconFile(state: TrayIconState, platform: NodeJS.Platform): string {
  return platform === 'darwin' ? `trayTemplate-${state}.png` : `tray-${state}.png`;
}
