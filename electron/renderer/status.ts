/**
 * The header's state (the agent and bridge pills, Pause / Resume) and the "stopped" box: why the bridge
 * session stopped for good and what to do (`/health` → `stopped`).
 */
import { has, t } from './catalogue.js';
import type { ConsentStatus, StopAdvice } from './control-types.js';
import { $ } from './dom.js';
import { act, changed, control, currentTransport } from './page.js';

/** `signedIn`: false while the agent offers a sign-in and nobody is signed in (undefined: no sign-in, a device set up by its config). */
const state: { status?: ConsentStatus; stopped?: StopAdvice; signedIn?: boolean } = {};
/** Each pill's template and raw state, to render it again in another language. */
const pills = new Map<string, [string, string]>();

/** The raw state a pill shows (`bridge-state`: the bridge session's, or `paused`). */
export const pillState = (id: 'agent-state' | 'bridge-state'): string | undefined => pills.get(id)?.[1];

/** A status pill: `labelKey` is the catalogue template (`Agent: {state}`), `value` the raw state. */
export function setPill(id: 'agent-state' | 'bridge-state', labelKey: string, value: string): void {
  pills.set(id, [labelKey, value]);
  // A device nobody signed in is not offline for a fault: it says so, without the alarm colour.
  if (id === 'bridge-state' && state.signedIn === false && (value === 'offline' || value === 'unknown')) value = 'not_signed_in';
  const el = $(id);
  el.dataset['state'] = value;
  const stateKey = `ui.state.${value}`;
  el.textContent = t(labelKey, { state: has(stateKey) ? t(stateKey) : t('ui.state.other', { state: value }) });
  changed();
}

/** Whether someone is signed in (from the sign-in screen), for the bridge pill. */
export function setSignedIn(v: boolean | undefined): void {
  state.signedIn = v;
  const bridge = pills.get('bridge-state');
  if (bridge) setPill('bridge-state', ...bridge);
}

/** True while the person has paused calls. */
export const isPaused = (): boolean => state.status?.paused === true;

/** Shows the agent's pause state (control.status, control/notification.status). */
export function setStatus(s: ConsentStatus): void {
  state.status = s;
  renderStatus();
}

function renderStatus(): void {
  const s = state.status;
  const btn = $<HTMLButtonElement>('pause');
  btn.disabled = !s;
  btn.textContent = t(s?.paused ? 'ui.resume' : 'ui.pause');
  if (s?.paused) setPill('bridge-state', 'ui.pill.calls', 'paused');
}

export async function refreshStatus(): Promise<void> {
  setStatus(await control.status());
}

/** The bridge's state from `/health` (unless paused, which the pill shows instead), and whether it stopped for good. */
export async function refreshHealth(): Promise<void> {
  const client = currentTransport();
  try {
    if (!client) throw new Error('not connected');
    const h = await client.health();
    if (!isPaused()) setPill('bridge-state', 'ui.pill.bridge', h.bridge);
    state.stopped = h.stopped;
    renderStopped();
  } catch {
    setPill('bridge-state', 'ui.pill.bridge', 'unknown');
  }
}

/** The window's own words for the agent's advice: `core.stop.X` (console, `aios-device login`) → `ui.stop.X` (this window's Sign in). */
const windowActionKey = (a: StopAdvice): string | undefined =>
  typeof a.action_key === 'string' && a.action_key.startsWith('core.stop.') ? 'ui.stop.' + a.action_key.slice('core.stop.'.length) : undefined;

function renderStopped(): void {
  const a = state.stopped;
  const box = $('stopped');
  box.hidden = !a;
  if (!a) {
    delete box.dataset['type'];
    return;
  }
  box.dataset['type'] = a.type;
  const title = `ui.stop.title.${a.type}`;
  $('stopped-title').textContent = has(title) ? t(title) : t('ui.stop.title.other', { type: a.type });
  const key = windowActionKey(a);
  const action = $('stopped-action');
  if (key && has(key)) {
    action.textContent = t(key);
    delete action.dataset['value'];
  } else {
    // A stop this page has no sentence for (a newer agent): the agent's own English advice, as agent data.
    action.textContent = a.action ?? '';
    action.dataset['value'] = '';
  }
}

/** Renders the header and the stopped box again (a new language). */
export function render(): void {
  for (const [id, [labelKey, value]] of pills) setPill(id as 'agent-state', labelKey, value);
  renderStatus();
  renderStopped();
}

/** Wires Pause / Resume. */
export function wire(): void {
  $('pause').addEventListener('click', () =>
    act(async () => {
      setStatus(await (isPaused() ? control.resume() : control.pause()));
      if (!isPaused()) await refreshHealth();
    }),
  );
}
