/**
 * The one window factory, and the hardening every web contents gets: isolated, sandboxed, no Node, no
 * navigation, no new windows, no webviews, no permissions.
 */
import { BrowserWindow, type Session, type WebContents, type WebPreferences } from 'electron';

/** Security settings of every window (Electron security checklist). */
export function windowPreferences(preload: string): WebPreferences {
  return {
    preload,
    contextIsolation: true,
    sandbox: true,
    nodeIntegration: false,
    nodeIntegrationInWorker: false,
    nodeIntegrationInSubFrames: false,
    webviewTag: false,
    webSecurity: true,
    allowRunningInsecureContent: false,
    spellcheck: false,
  };
}

/** Denies navigation, `window.open` and webviews in `contents`. Applied to every web contents the app creates. */
export function hardenContents(contents: WebContents): void {
  contents.setWindowOpenHandler(() => ({ action: 'deny' }));
  contents.on('will-navigate', (e) => e.preventDefault());
  contents.on('will-redirect', (e) => e.preventDefault());
  contents.on('will-attach-webview', (e) => e.preventDefault());
}

/** Refuses every permission request (camera, notifications, …): the page needs none. */
export function denyPermissions(session: Session): void {
  session.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  session.setPermissionCheckHandler(() => false);
}

/** Options of the window factory. */
export interface WindowOptions {
  preload: string;
  url: string;
  icon?: string;
  title?: string;
}

/** Creates the tray's window, shown once its page has painted. */
export function createWindow(opts: WindowOptions): BrowserWindow {
  const win = new BrowserWindow({
    width: 480,
    height: 720,
    minWidth: 360,
    show: false,
    title: opts.title ?? 'AIOS Device',
    autoHideMenuBar: true,
    ...(opts.icon ? { icon: opts.icon } : {}),
    webPreferences: windowPreferences(opts.preload),
  });
  hardenContents(win.webContents);
  win.once('ready-to-show', () => win.show());
  void win.loadURL(opts.url);
  return win;
}
