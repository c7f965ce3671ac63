/**
 * The tray window / local web UI: one page for two hosts. In the Electron shell it talks to the agent
 * through `window.aiosDevice` (electron/preload.ts); in a plain browser it is served by the agent's local
 * endpoint at /ui/ and talks to `/health` and `WS /rpc` on that same origin, with the local token from the
 * URL fragment (#token=…) or typed in. Everything the agent sends is shown with textContent, never parsed
 * as HTML. Every sentence comes from the string catalogues (en.json, zh-CN.json); what the agent sends
 * (names, sentences, ids) is shown as is, in elements marked `data-value`. `?lang=pseudo` renders every
 * catalogue string as ⟦…⟧ (a test mode).
 *
 * This module wires the screens together (screens.ts the navigation; home.ts, prompt.ts, decisions.ts,
 * activity.ts, settings.ts; signin.ts and status.ts above them) and connects; scripts/build-renderer.mjs bundles it into app.js.
 */
import { LOCALE_KEY, applyStaticStrings, currentLocale, intlLocale, loadLocale, pickLocale, type PageLocale } from './catalogue.js';
import { CONTROL_API } from '../../src/control/api.js';
import type { Transport } from './control-client.js';
import type { ControlEvents } from './control-types.js';
import { $, input, select } from './dom.js';
import { act, control, currentTransport, loadAgentWords, onChange, renderError, showError, useTransport } from './page.js';
import * as activity from './activity.js';
import * as decisions from './decisions.js';
import * as home from './home.js';
import * as prompt from './prompt.js';
import * as screens from './screens.js';
import * as settings from './settings.js';
import * as signin from './signin.js';
import * as status from './status.js';
import { forgetToken, ipcTransport, keepToken, takeToken, wsTransport } from './transports.js';

const refreshAll = (): Promise<unknown> =>
  Promise.all([status.refreshStatus(), prompt.refresh(), decisions.refresh(), activity.refresh(), status.refreshHealth(), settings.refresh(), signin.refresh(), home.refresh()]);

function onEvent(method: string, params: unknown): void {
  switch (method as keyof ControlEvents) {
    case 'control/notification.prompt':
    case 'control/notification.prompt_withdrawn':
      if (method.endsWith('withdrawn')) {
        const w = params as { prompt_id?: string; reason?: string } | undefined;
        if (w?.prompt_id && w.reason) prompt.withdrawn(w.prompt_id, w.reason);
      }
      void act(async () => {
        await prompt.refresh();
        if (method.endsWith('withdrawn')) await Promise.all([activity.refresh(), decisions.refresh(), home.refresh()]);
      });
      break;
    case 'control/notification.status': {
      const s = params as ControlEvents['control/notification.status'];
      status.setStatus(s);
      if (!s.paused) void status.refreshHealth();
      break;
    }
    case 'control/notification.signin':
      signin.update(params as ControlEvents['control/notification.signin']);
      // A revoked sign-in shows here first; /health says why the session stopped.
      void status.refreshHealth();
      break;
    case 'control/notification.grants':
      void act(() => settings.grantsChanged());
      break;
    // The bridge session's state changed (the tray's IPC in Electron, the local endpoint in a browser):
    // the pill at once, and /health for whether it stopped for good (and why) or runs again.
    case 'tray/notification.bridge':
    case 'control/notification.bridge':
      if (!status.isPaused()) status.setPill('bridge-state', 'ui.pill.bridge', (params as ControlEvents['control/notification.bridge']).bridge);
      void status.refreshHealth();
      break;
  }
}

/**
 * In a browser this page is the one who answers prompts while it is open: it attaches and sends a
 * heartbeat; when the tab closes or hangs the agent stops sending it prompts within seconds. (In the
 * Electron window the tray's main process is the answerer.)
 */
const answerer: { id?: string; timer?: ReturnType<typeof setInterval> } = {};
async function attachAnswerer(): Promise<void> {
  const r = await control.attachAnswerer({ name: 'web page' });
  answerer.id = r.answerer_id;
  clearInterval(answerer.timer);
  answerer.timer = setInterval(() => {
    control.heartbeat({ answerer_id: r.answerer_id }).then(
      (h) => {
        if (!h.ok) void attachAnswerer().catch(() => undefined);
      },
      () => undefined,
    );
  }, r.heartbeat_ms);
}
function stopAnswerer(): void {
  clearInterval(answerer.timer);
  answerer.timer = undefined;
  answerer.id = undefined;
}

function connect(transport: Transport): void {
  useTransport(transport);
  transport.start(
    onEvent,
    (s) => {
      status.setPill('agent-state', 'ui.pill.agent', s);
      if (s === 'connected') {
        if (transport.needsToken) void act(attachAnswerer);
        void act(async () => {
          await loadAgentWords();
          await refreshAll();
        });
      } else stopAnswerer();
    },
    () => {
      forgetToken();
      askForToken({ key: 'ui.token.refused' });
    },
  );
}

function askForToken(message?: { key: string }): void {
  // Not a lost connection: this page has no token to connect with yet.
  status.setPill('agent-state', 'ui.pill.agent', 'no_token');
  if (message) showError(message);
  const form = $<HTMLFormElement>('token-form');
  form.hidden = false;
  form.onsubmit = (e) => {
    e.preventDefault();
    const token = input('token-input').value.trim();
    if (!token) return;
    keepToken(token);
    form.hidden = true;
    showError(undefined);
    connect(wsTransport(location.origin, token));
  };
}

/** Puts every string of the page in the current locale (static ones from data-i18n, the rest re-rendered). */
function applyLocale(): void {
  document.documentElement.lang = intlLocale();
  applyStaticStrings();
  if (currentLocale() !== 'pseudo') select('lang').value = currentLocale();
  status.render();
  decisions.render();
  activity.render();
  home.render();
  renderError();
  prompt.render();
  signin.render();
  settings.render();
}

async function main(): Promise<void> {
  $('lang').addEventListener('change', () =>
    act(async () => {
      const locale = select('lang').value as PageLocale;
      localStorage.setItem(LOCALE_KEY, locale);
      await loadLocale(locale);
      await loadAgentWords();
      applyLocale();
    }),
  );
  await loadLocale(pickLocale());
  const api = window.aiosDevice;
  // "Open browser" goes through the shell in Electron, where window.open is denied.
  signin.wire((url) => (api ? void api.openExternal(url) : void window.open(url, '_blank', 'noopener,noreferrer')));
  status.setPill('agent-state', 'ui.pill.agent', 'connecting');
  status.setPill('bridge-state', 'ui.pill.bridge', 'unknown');
  applyLocale();
  screens.wire();
  onChange(home.render);
  home.wire();
  status.wire();
  prompt.wire();
  activity.wire();
  settings.wire(api);
  // The agent skips the desktop notification while this page is in front.
  const focus = (): void => {
    if (currentTransport()) void control.setFocused({ focused: document.visibilityState === 'visible' && document.hasFocus() }).catch(() => undefined);
  };
  window.addEventListener('focus', focus);
  window.addEventListener('blur', focus);
  document.addEventListener('visibilitychange', focus);
  setInterval(() => {
    if (!currentTransport()) return;
    void status.refreshHealth();
    if (screens.current() === 'home') void home.refresh().catch(() => undefined);
  }, 10_000);
  if (api) connect(ipcTransport(api, CONTROL_API));
  else {
    const token = takeToken();
    if (token) connect(wsTransport(location.origin, token));
    else askForToken();
  }
}

void main();
