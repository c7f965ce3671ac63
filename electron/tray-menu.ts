/**
 * The tray's context menu as a template (plain data, so it is built the same way everywhere):
 * a status line, Open, Pause/Resume and Quit. Every label comes from the catalogues (tray-strings.ts).
 */
import type { MenuItemConstructorOptions } from 'electron';
import { attentionReasons, type TrayIconInputs } from './tray-icon.js';
import { trayText, type TrayText } from './tray-strings.js';

/** What the menu shows (the icon is chosen from the same fields: tray-icon.ts). */
export interface TrayState extends TrayIconInputs {
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

let english: TrayText | undefined;
/** English until main.ts passes the user's locale. */
const en = (): TrayText => (english ??= trayText('en'));

/** One line for the tooltip and the menu's first (disabled) item. */
export function trayStatusLine(s: TrayState, t: TrayText = en()): string {
  if (s.problem) return t('status', { parts: s.problem });
  const parts = [t(`state.${s.paused ? 'paused' : s.bridge}`)];
  if (s.promptsWaiting > 0) parts.push(t('waiting', { count: s.promptsWaiting }));
  const reasons = attentionReasons(s);
  if (reasons.includes('sign_in')) parts.push(t('sign_in_needed'));
  if (reasons.includes('update')) parts.push(t('update_required'));
  if ((s.callsRunning ?? 0) > 0) parts.push(t('running', { count: s.callsRunning! }));
  for (const kind of new Set(s.capturing ?? [])) parts.push(t('in_use', { kind: kindName(kind, t) }));
  return t('status', { parts: parts.join(t('separator')) });
}

/** A device kind's name in the catalogue (`camera`, `microphone`, `screen`), else the kind as sent. */
function kindName(kind: string, t: TrayText): string {
  const key = `kind.${kind}`;
  const s = t(key);
  return s === `ui.tray.${key}` ? kind : s;
}

/** The menu template for `Menu.buildFromTemplate`. */
export function trayMenuTemplate(s: TrayState, a: TrayActions, t: TrayText = en()): MenuItemConstructorOptions[] {
  const running = s.problem === undefined;
  return [
    { label: trayStatusLine(s, t), enabled: false },
    ...(s.captureProviders?.length ? [{ label: t('capture_provider', { names: s.captureProviders.join(t('separator')) }), enabled: false }] : []),
    { type: 'separator' },
    { label: t('open'), click: () => a.open(), enabled: running },
    s.paused
      ? { label: t('resume'), click: () => a.resume(), enabled: running }
      : { label: t('pause'), click: () => a.pause(), enabled: running },
    { type: 'separator' },
    { label: t('quit'), click: () => a.quit() },
  ];
}
