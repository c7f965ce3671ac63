/**
 * The Home screen: the connection in a sentence (the window to the agent, the agent to the bridge), who is
 * signed in where, what waits for the person (prompts, new adapters to approve; with a way to each), and
 * the latest calls in words.
 */
import { t } from './catalogue.js';
import type { CallRow } from './control-types.js';
import { $ } from './dom.js';
import { formatCount } from './format.js';
import { control, currentTransport } from './page.js';
import { callText, callTime } from './activity.js';
import * as prompt from './prompt.js';
import * as screens from './screens.js';
import * as settings from './settings.js';
import * as signin from './signin.js';

/** How many calls Home shows. */
const LATEST = 5;
let calls: CallRow[] = [];

/** The connection in a sentence: the window's link to the agent first, then the agent's to the bridge. */
function connectionText(): string {
  const agent = $('agent-state').dataset['state'];
  if (agent !== 'connected') return t(agent === 'no_token' ? 'ui.home.connection.no_token' : agent === 'connecting' ? 'ui.home.connection.agent_connecting' : 'ui.home.connection.agent_lost');
  const bridge = $('bridge-state').dataset['state'] ?? 'unknown';
  const known = ['connected', 'connecting', 'offline', 'paused', 'not_signed_in'];
  return t(`ui.home.connection.${known.includes(bridge) ? bridge : 'unknown'}`);
}

function accountText(): string {
  const v = signin.current();
  if (!v) return t('ui.home.account.config');
  if (v.state === 'signed_in') return t('ui.home.account.signed_in', { user: v.user_id ?? '', workspace: v.workspace_id ?? '', bridge: v.bridge_url ?? '' });
  return t(v.state === 'waiting' ? 'ui.home.account.waiting' : 'ui.home.account.none');
}

function callItem(c: CallRow): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset['callId'] = c.call_id;
  li.dataset['state'] = c.state;
  li.append(callText(c), callTime(c));
  return li;
}

/** Renders the screen from what the other screens know (the pills, the sign-in, the prompts). */
export function render(): void {
  $('home-connection').textContent = connectionText();
  $('home-account').textContent = accountText();
  const n = prompt.waiting();
  $('home-waiting').textContent = n ? t('ui.home.waiting_count', { count: formatCount(n) }) : t('ui.home.waiting_none');
  $('home-open-prompt').hidden = n === 0;
  const adapters = settings.waitingAdapters().length;
  $('home-adapters-line').hidden = adapters === 0;
  $('home-adapters').textContent = t('ui.home.adapters_waiting', { count: formatCount(adapters) });
  $('home-calls').replaceChildren(...calls.map(callItem));
  $('home-no-calls').hidden = calls.length > 0;
}

/** Reads the latest calls again. */
export async function refresh(): Promise<void> {
  if (!currentTransport()) return;
  calls = (await control.listActivity({ limit: LATEST })).calls;
  render();
}

/** Wires the ways from Home to the Confirmations and Activity screens. */
export function wire(): void {
  $('home-open-prompt').addEventListener('click', () => screens.show('prompt', { focus: true }));
  $('home-all-activity').addEventListener('click', () => screens.show('activity', { focus: true }));
  $('home-open-functions').addEventListener('click', () => screens.show('functions', { focus: true }));
  screens.onShow((s) => {
    if (s === 'home') void refresh().catch(() => undefined);
  });
}
