/**
 * The hidden capture window: the capture page (electron/renderer/capture.html) loaded from the agent's
 * local endpoint, attached to the agent as its capture provider over `WS /rpc` with the local token, in
 * a session of its own that allows camera/microphone/screen capture for that page and nothing else (the
 * default session refuses every permission). `desktopCapturer` is main-process only, so the session's
 * display-media handler answers getDisplayMedia with the primary screen. Not run on CI (no Electron
 * binary there); the page itself is tested in Chromium (handlers/media/test/capture-page.test.ts).
 */
import { BrowserWindow, desktopCapturer, session, type Session } from 'electron';
import { hardenContents, windowPreferences } from './window.js';

/** In-memory partition (no `persist:`): the capture session stores nothing on disk. */
export const CAPTURE_PARTITION = 'aios-capture';

/** The only permissions the capture session grants, and only to the agent's own origin. */
export const CAPTURE_PERMISSIONS: ReadonlySet<string> = new Set(['media', 'display-capture']);

/** Restricts `s` to media capture by pages of `origin`; everything else is refused. */
export function allowMediaOnly(s: Session, origin: string): void {
  s.setPermissionRequestHandler((_wc, permission, callback, details) => callback(CAPTURE_PERMISSIONS.has(permission) && new URL(details.requestingUrl).origin === origin));
  s.setPermissionCheckHandler((_wc, permission, requestingOrigin) => CAPTURE_PERMISSIONS.has(permission) && requestingOrigin === origin);
  s.setDisplayMediaRequestHandler((_request, callback) => {
    desktopCapturer.getSources({ types: ['screen'] }).then(
      (sources) => callback(sources[0] ? { video: sources[0] } : {}),
      () => callback({}),
    );
  });
}

/** Opens the hidden capture window for the agent's local endpoint. */
export function createCaptureWindow(endpoint: { http: string; token: string }): BrowserWindow {
  const origin = new URL(endpoint.http).origin;
  const ses = session.fromPartition(CAPTURE_PARTITION);
  allowMediaOnly(ses, origin);
  // The page needs no preload: it talks to the agent over the local endpoint, like in a browser.
  const { preload: _none, ...prefs } = windowPreferences('');
  const win = new BrowserWindow({
    show: false,
    width: 420,
    height: 320,
    title: 'AIOS Device capture',
    webPreferences: { ...prefs, session: ses, backgroundThrottling: false, autoplayPolicy: 'no-user-gesture-required' },
  });
  hardenContents(win.webContents);
  void win.loadURL(`${origin}/ui/capture.html#token=${encodeURIComponent(endpoint.token)}`);
  return win;
}
