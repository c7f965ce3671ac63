/**
 * The tray shell's main process. Thin on purpose: it runs the agent in-process through the core's public
 * entry, shows a tray icon with Open / Pause-Resume / Quit, opens the one window when a prompt needs the
 * user, and nudges the agent to reconnect after sleep or a network change. Everything else is in src/.
 */
import { app, dialog, ipcMain, Menu, nativeImage, net, Notification, powerMonitor, session, shell, Tray, type BrowserWindow } from 'electron';
import { networkInterfaces } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CONTROL_EVENTS,
  createControlMethods,
  createLogger,
  defaultDataDir,
  loadAgentConfig,
  AgentHost,
  personErrorText,
  SIGNIN_EVENT,
  APP_VERSION,
  RENDERER_DIR,
  toLocale,
  type AgentConfig,
  type BridgeStatus,
  type ControlMethods,
  type Locale,
  type Logger,
  type RunningAgent,
} from '../src/shell.js';
import { isSignInAddress, registerIpc, type IpcRegistration, type ShellOps } from './ipc.js';
import { LinuxAutostart } from './autostart-linux.js';
import { watchConnectivity, type ConnectivityWatcher } from './reconnect.js';
import { registerRendererScheme, serveRenderer } from './renderer-protocol.js';
import { isRendererUrl, RENDERER_URL } from './renderer-url.js';
import { trayMenuTemplate, trayStatusLine, type TrayState } from './tray-menu.js';
import { trayIconFile, trayIconState, type TrayIconState } from './tray-icon.js';
import { trayText, type TrayText } from './tray-strings.js';
import { DisconnectNotice } from './disconnect-notice.js';
import { createWindow, denyPermissions, hardenContents } from './window.js';
import { createCaptureWindow } from './capture-window.js';

const here = dirname(fileURLToPath(import.meta.url));
/** Project root in development (dist/electron/ → ../..); packaged resources sit in process.resourcesPath. */
const devRoot = resolve(here, '..', '..');

/** The config file: `--config <file>`, else AIOS_DEVICE_CONFIG, else config.yaml in the data directory. */
function configPath(): string {
  const i = process.argv.indexOf('--config');
  const arg = i >= 0 ? process.argv[i + 1] : process.argv.find((a) => a.startsWith('--config='))?.slice('--config='.length);
  return arg ?? process.env['AIOS_DEVICE_CONFIG'] ?? join(defaultDataDir(), 'config.yaml');
}

function iconsDir(): string {
  return app.isPackaged ? join(process.resourcesPath, 'resources', 'icons') : join(devRoot, 'resources', 'icons');
}

function networkFingerprint(): string {
  return Object.entries(networkInterfaces())
    .flatMap(([name, addrs]) => (addrs ?? []).filter((a) => !a.internal).map((a) => `${name}=${a.address}`))
    .sort()
    .join(',');
}

let host: AgentHost | undefined;
let running: RunningAgent | undefined;
/** Undoes what wire() set up for one running agent (the host replaces it after a sign-in as a new identity). */
let unwire: (() => void) | undefined;
let tray: Tray | undefined;
let window: BrowserWindow | undefined;
let ipc: IpcRegistration | undefined;
let watcher: ConnectivityWatcher | undefined;
let log: Logger | undefined;
/** The folder of the tray's log (Settings → About → Open logs). */
let logsDir: string | undefined;
const state: TrayState = { bridge: 'offline', paused: false, promptsWaiting: 0 };
/** The OS language picks the tray's strings (Chinese → zh-CN, else en), like the window's default. */
let t: TrayText = trayText('en');
/** The person's locale, for the tray's strings and for errors said in their words. */
let locale: Locale = 'en';
let shownIcon: TrayIconState | undefined;
// One notice when the bridge has been out of reach for over a minute (electron/disconnect-notice.ts).
const offlineNotice = new DisconnectNotice(() => {
  if (Notification.isSupported()) new Notification({ title: t('notice.offline_title'), body: t('notice.offline_body') }).show();
});

function refreshTray(): void {
  if (!tray) return;
  const icon = trayIconState(state);
  if (icon !== shownIcon) {
    shownIcon = icon;
    const image = nativeImage.createFromPath(join(iconsDir(), trayIconFile(icon, process.platform)));
    if (process.platform === 'darwin') image.setTemplateImage(true);
    tray.setImage(image);
  }
  offlineNotice.update(state.bridge === 'connected', state.problem !== undefined || !!state.signInNeeded || !!state.updateRequired);
  tray.setToolTip(trayStatusLine(state, t));
  tray.setContextMenu(
    Menu.buildFromTemplate(
      trayMenuTemplate(
        state,
        {
          open: openWindow,
          pause: () => running?.consent.pause('tray'),
          resume: () => running?.consent.resume(),
          quit: () => app.quit(),
        },
        t,
      ),
    ),
  );
}

function openWindow(): void {
  if (window && !window.isDestroyed()) {
    if (window.isMinimized()) window.restore();
    window.show();
    window.focus();
    return;
  }
  window = createWindow({ preload: join(here, 'preload.cjs'), url: RENDERER_URL, icon: join(iconsDir(), 'icon.png') });
  window.on('closed', () => (window = undefined));
}

/**
 * The Settings screen's shell operations: the native folder picker, start at login (Electron's login
 * items on macOS and Windows, an XDG autostart entry on Linux), and opening the logs folder.
 */
function shellOps(logsDir: string): ShellOps {
  const linux = process.platform === 'linux' ? new LinuxAutostart() : undefined;
  const loginItem = async () => ({ supported: true, enabled: linux ? linux.isEnabled() : app.getLoginItemSettings().openAtLogin });
  return {
    async pickFolder() {
      const r = window && !window.isDestroyed() ? await dialog.showOpenDialog(window, { properties: ['openDirectory'] }) : await dialog.showOpenDialog({ properties: ['openDirectory'] });
      return r.canceled ? null : (r.filePaths[0] ?? null);
    },
    getLoginItem: loginItem,
    async setLoginItem(enabled) {
      if (linux) {
        // An AppImage runs from a temporary mount: its own path ($APPIMAGE) is the one that lasts.
        if (enabled) linux.enable({ exec: process.env['APPIMAGE'] ?? process.execPath, args: app.isPackaged ? [] : [app.getAppPath()] });
        else linux.disable();
      } else app.setLoginItemSettings({ openAtLogin: enabled });
      return loginItem();
    },
    async openLogs() {
      const problem = await shell.openPath(logsDir);
      if (problem) throw Object.assign(new Error(problem), { type: 'device_unavailable' });
      return { opened: logsDir };
    },
  };
}

async function start(): Promise<void> {
  denyPermissions(session.defaultSession);
  app.on('web-contents-created', (_e, contents) => hardenContents(contents));
  // The window's pages as built beside the core (dist/renderer/, scripts/build-renderer.mjs).
  serveRenderer(RENDERER_DIR);
  locale = toLocale(app.getPreferredSystemLanguages()[0] ?? app.getLocale());
  t = trayText(locale);
  tray = new Tray(nativeImage.createEmpty());
  tray.on('click', openWindow);
  refreshTray();

  const file = configPath();
  try {
    const config: AgentConfig = loadAgentConfig(file);
    const logFile = config.log?.file ?? join(config.data_dir, 'tray.log');
    logsDir = dirname(logFile);
    log = createLogger({ level: config.log?.level ?? 'info', file: logFile, ownFile: config.log?.file === undefined });
    host = await AgentHost.start(config, log);
  } catch (e) {
    state.problem = t('not_running');
    refreshTray();
    dialog.showErrorBox(t('start_failed'), t('start_failed_detail', { message: personErrorText(e, locale), file }));
    return;
  }
  wire(host.current);
  // A sign-in as a new identity starts the agent again in-process: everything below is wired anew.
  host.on('started', (r) => {
    unwire?.();
    wire(r);
  });
  host.on('failed', (e) => {
    state.problem = t('not_running');
    refreshTray();
    dialog.showErrorBox(t('signin.restart_failed'), personErrorText(e, locale));
  });
  refreshTray();
}

/** Connects the tray, the window's IPC and the reconnect watcher to one running agent. */
function wire(r: RunningAgent): void {
  running = r;
  const { agent, consent } = r;
  state.problem = undefined;
  state.signInNeeded = state.updateRequired = false;
  state.signin = r.signin?.status();
  // Nobody signed in (or a code waiting): the icon asks for attention and the menu offers "Sign in…".
  if (state.signin) state.signInNeeded = state.signin.state !== 'signed_in';
  r.signin?.on('change', (v) => {
    state.signin = v;
    state.signInNeeded = v.state !== 'signed_in';
    refreshTray();
    ipc?.broadcast(SIGNIN_EVENT, v);
  });
  state.bridge = agent.session?.status ?? 'offline';
  state.paused = consent.status().paused;
  agent.on('status', (s: BridgeStatus) => {
    state.bridge = s;
    refreshTray();
    ipc?.broadcast('tray/notification.bridge', { bridge: s });
  });
  // startAgent's own listener logs it and shows the desktop notice.
  agent.on('fatal', (f) => {
    // Sign-in and update problems are "needs attention" with their own words; others say the stop type.
    if (f.type === 'client_outdated') state.updateRequired = true;
    else if (f.type === 'unauthorized' || f.type === 'replaced' || f.type === 'identity_mismatch') state.signInNeeded = true;
    else state.problem = t('stopped', { type: f.type });
    refreshTray();
  });
  // A new sign-in picked up while running (`aios-device logout` + `login`): the session is back.
  agent.on('signin', (s) => {
    if (s.reconnecting) {
      state.problem = undefined;
      state.signInNeeded = state.updateRequired = false;
    }
    refreshTray();
  });

  ipc = registerIpc(ipcMain, {
    // Every control method (consent, grants, Settings, sign-in), as the local endpoint serves them.
    methods: { ...createControlMethods(consent), ...(r.control as ControlMethods) },
    ...(logsDir ? { shell: shellOps(logsDir) } : {}),
    // "Open browser" on the sign-in screen: only the verification address of the sign-in waiting now.
    openExternal: async (url) => {
      if (!isSignInAddress(url, r.signin?.status())) return false;
      await shell.openExternal(url);
      return true;
    },
    // Like the local endpoint's /health: why the session stopped for good and what to do, while it is stopped.
    health: () => {
      const stopped = agent.stopped();
      return { status: 'ok', bridge: agent.session?.status ?? 'offline', version: APP_VERSION, ...(stopped ? { stopped } : {}) };
    },
    isTrustedUrl: isRendererUrl,
    onRefused: (channel) => log?.warn({ channel }, 'refused an IPC request from a page that is not ours'),
  });
  for (const name of Object.values(CONTROL_EVENTS)) consent.events.on(name, (params: unknown) => ipc?.broadcast(name, params));
  consent.events.on(CONTROL_EVENTS.status, (s: { paused: boolean; prompts_waiting: number; handlers?: { media?: { capturing?: { kind: string }[]; providers?: { name: string }[] } } }) => {
    state.paused = s.paused;
    state.promptsWaiting = s.prompts_waiting;
    // The media handler's entry: what is capturing now (the icon state) and which capture page is attached.
    state.capturing = (s.handlers?.media?.capturing ?? []).map((c) => c.kind);
    state.captureProviders = (s.handlers?.media?.providers ?? []).map((p) => p.name);
    refreshTray();
  });
  // A prompt needs the user: bring the window up (it is the `ui` provider's screen). The window can always
  // be opened, so the ui provider counts as present even while it is closed (`auto` picks it).
  // It attaches as the answerer like any UI, with a heartbeat from this process: if the tray hangs, its
  // presence lapses within seconds and prompts end `confirmation_unavailable` instead of waiting on nobody.
  let answerer = consent.ui.attach('tray');
  const beat = setInterval(() => {
    if (!consent.ui.heartbeat(answerer.answerer_id)) answerer = consent.ui.attach('tray');
  }, answerer.heartbeat_ms);
  // Busy: calls executing now. Sampled, as the dispatcher has no event for it; only a change redraws.
  const busy = setInterval(() => {
    const n = agent.dispatcher.activeCount;
    if (n !== (state.callsRunning ?? 0)) {
      state.callsRunning = n;
      refreshTray();
    }
  }, 1000);
  app.once('before-quit', () => {
    clearInterval(beat);
    clearInterval(busy);
    offlineNotice.dispose();
  });
  consent.events.on(CONTROL_EVENTS.prompt, () => openWindow());
  // The media handler's capture provider: a hidden window running the capture page (docs/handlers/media.md).
  // Once: after a restart the endpoint is back on the same port with the same token, and the page reconnects.
  const ep = r.endpoint?.info();
  if (ep && r.endpoint && !captureStarted) {
    captureStarted = true;
    createCaptureWindow({ http: ep.http, token: r.endpoint.localToken });
  }

  watcher = watchConnectivity(
    (why) => {
      log?.info({ why }, 'reconnecting now');
      agent.reconnectNow();
    },
    { powerMonitor, isOnline: () => net.isOnline(), networkFingerprint },
  );
  unwire = () => {
    clearInterval(beat);
    clearInterval(busy);
    watcher?.stop();
    ipc?.dispose();
    ipc = undefined;
  };
  refreshTray();
}
let captureStarted = false;

registerRendererScheme();

if (!app.requestSingleInstanceLock()) {
  // Another tray already runs for this user: it gets our `second-instance` event and opens its window.
  app.quit();
} else {
  app.on('second-instance', () => openWindow());
  // A tray app keeps running with no window open.
  app.on('window-all-closed', () => undefined);
  let stopped = false;
  app.on('before-quit', (e) => {
    if (stopped || !host) return;
    e.preventDefault();
    const r = host;
    host = undefined;
    running = undefined;
    watcher?.stop();
    ipc?.dispose();
    // Clean stop (PROTOCOL.md §11): running calls get their abort signal and their outcomes are journalled.
    void r.stop().finally(() => {
      stopped = true;
      app.quit();
    });
  });
  // `.catch` after `.then(start)`: a failure inside start() (the tray, the agent) gets the dialog too.
  app.whenReady().then(start).catch((e: unknown) => {
    dialog.showErrorBox('AIOS Device could not start', (e as Error).message);
    app.exit(1);
  });
}
