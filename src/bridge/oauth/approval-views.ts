/**
 * The approval page's HTML: server-rendered, self-contained (inline CSS, no scripts, no external
 * assets), every interpolated value escaped, every word from the bridge catalogue (src/i18n/bridge/) in the
 * language the request chose (page-locale.ts), with a switch between the languages on every page.
 */
import type { Locale } from '../../i18n/index.js';
import type { DeviceCodeRow, DeviceRow } from './oauth-store.js';
import type { PageText } from './page-locale.js';

/** Escapes text for HTML element and attribute content. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const CSS = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:44rem;margin:3rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
h1{font-size:1.35rem;margin-top:0}
label{display:block;margin:.8rem 0 .2rem;font-weight:600}
input,select{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;border:1px solid #9aa3b2;border-radius:4px}
button{font:inherit;padding:.55rem 1.2rem;margin:1rem .5rem 0 0;border-radius:4px;border:1px solid #3358c4;background:#3358c4;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#3358c4}
button.danger{background:#fff;color:#b3261e;border-color:#b3261e}
.code{font:700 2rem/1.2 ui-monospace,monospace;letter-spacing:.15em;text-align:center;padding:.6rem;background:#eef2ff;border-radius:6px}
.error{color:#b3261e;background:#fdecea;padding:.6rem;border-radius:4px}
.ok{color:#1e6b34;background:#e7f6ec;padding:.6rem;border-radius:4px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0;word-break:break-all}
table{width:100%;border-collapse:collapse;font-size:.9rem}td,th{text-align:left;padding:.3rem;border-top:1px solid #e2e5ea;word-break:keep-all}td button{white-space:nowrap}
.lang{font-size:.85rem;text-align:right;margin:-1rem 0 .5rem}.lang a{margin-left:.6rem}.lang a[aria-current]{font-weight:700;color:inherit;text-decoration:none}
code{font-size:.85em;word-break:break-all}
.who{font-size:.9rem;color:#5a6272;display:flex;justify-content:space-between;align-items:center}.who button{margin:0;padding:.1rem .6rem}
`;

/** What every view needs: the language, its renderer, and the address the language switch links to. */
export interface ViewLocale {
  locale: Locale;
  t: PageText;
  /** The GET address the switch reloads in another language (default `/device`). */
  here?: string;
}

/** The language names, each in its own language (the switch shows them so). */
const LANGUAGE_NAMES: Record<Locale, string> = { en: 'English', 'zh-CN': '中文' };

function langSwitch(v: ViewLocale): string {
  const here = v.here ?? '/device';
  const sep = here.includes('?') ? '&' : '?';
  const links = (Object.keys(LANGUAGE_NAMES) as Locale[])
    .map((l) => `<a href="${esc(`${here}${sep}lang=${l}`)}" lang="${l}" hreflang="${l}"${l === v.locale ? ' aria-current="true"' : ''}>${esc(LANGUAGE_NAMES[l])}</a>`)
    .join('');
  return `<nav class="lang" aria-label="${esc(v.t('bridge.lang.switch'))}">${links}</nav>`;
}

function page(v: ViewLocale, title: string, body: string): string {
  return `<!doctype html><html lang="${v.locale}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${CSS}</style></head><body><main>${langSwitch(v)}${body}</main></body></html>`;
}

function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`;
}

function notice(error?: string): string {
  return error ? `<p class="error" role="alert" id="error">${esc(error)}</p>` : '';
}

function who(v: ViewLocale, userName: string, csrf: string): string {
  const name = `<strong id="signed-in-user">${esc(userName)}</strong>`;
  const [before, after] = v.t('bridge.who.signed_in', { user: '\u0000' }).split('\u0000');
  return `<div class="who"><span>${esc(before ?? '')}${name}${esc(after ?? '')}</span>
<form method="post" action="/device/signout">${hidden('csrf', csrf)}<button class="secondary" type="submit">${esc(v.t('bridge.who.signout'))}</button></form></div>`;
}

/** The sign-in form; the user code (if any) rides along so the user lands on the approval screen afterwards. */
export function signInView(v: ViewLocale, p: { csrf: string; userCode: string; error?: string }): string {
  const title = v.t('bridge.signin.title');
  return page(
    v,
    title,
    `<h1>${esc(title)}</h1>${notice(p.error)}
<form method="post" action="/device/signin">${hidden('csrf', p.csrf)}${hidden('user_code', p.userCode)}
<label for="username">${esc(v.t('bridge.signin.user'))}</label><input id="username" name="username" autocomplete="username" required autofocus>
<label for="password">${esc(v.t('bridge.signin.password'))}</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit" id="signin">${esc(v.t('bridge.signin.submit'))}</button></form>`,
  );
}

/** A moment for a person: date and time in the page's language, in UTC (said so). */
function when(v: ViewLocale, ms: number | null): string {
  if (ms === null) return v.t('bridge.devices.never');
  return `${new Date(ms).toLocaleString(v.locale, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' })} UTC`;
}

/** One of the user's devices as the list shows it: what tells two devices apart, and whether it is connected now. */
export interface ListedDevice extends DeviceRow {
  online: boolean;
}

/** Asks for the code the device shows; also lists the user's devices with a revoke button each. */
export function enterCodeView(v: ViewLocale, p: { csrf: string; userName: string; devices: ListedDevice[]; error?: string; message?: string }): string {
  const t = v.t;
  const rows = p.devices
    .map(
      (d) => `<tr><td>${esc(d.name)}</td><td><code>${esc(d.id)}</code></td><td>${esc(d.platform)}</td><td>${esc(d.workspace_id)}</td>
<td>${esc(when(v, d.last_seen_at))}</td><td>${esc(d.revoked_at ? '' : t(d.online ? 'bridge.devices.online' : 'bridge.devices.offline'))}</td><td>${esc(t(d.revoked_at ? 'bridge.devices.revoked' : 'bridge.devices.active'))}</td>
<td>${d.revoked_at ? '' : `<form method="post" action="/device/revoke">${hidden('csrf', p.csrf)}${hidden('device_id', d.id)}<button class="danger" type="submit" aria-label="${esc(t('bridge.devices.revoke_label', { name: d.name }))}">${esc(t('bridge.devices.revoke'))}</button></form>`}</td></tr>`,
    )
    .join('');
  const heads = (['bridge.devices.name', 'bridge.devices.id', 'bridge.devices.platform', 'bridge.devices.workspace', 'bridge.devices.last_seen', 'bridge.devices.connection', 'bridge.devices.state'] as const)
    .map((k) => `<th>${esc(t(k))}</th>`)
    .join('');
  const title = t('bridge.enter.title');
  return page(
    v,
    title,
    `${who(v, p.userName, p.csrf)}<h1>${esc(title)}</h1>${notice(p.error)}${p.message ? `<p class="ok" role="status">${esc(p.message)}</p>` : ''}
<form method="get" action="/device"><label for="user_code">${esc(t('bridge.enter.code'))}</label>
<input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" placeholder="XXXX-XXXX" required>
<button type="submit">${esc(t('bridge.enter.continue'))}</button></form>
${p.devices.length ? `<h2>${esc(t('bridge.devices.title'))}</h2><table id="devices"><thead><tr>${heads}<th></th></tr></thead><tbody>${rows}</tbody></table>` : ''}`,
  );
}

/** The decision screen: code to compare, what the device says about itself, workspace choice, approve/deny. */
export function approveView(v: ViewLocale, p: { csrf: string; userName: string; request: DeviceCodeRow; workspaces: string[]; error?: string }): string {
  const t = v.t;
  const r = p.request;
  const options = p.workspaces.map((w) => `<option value="${esc(w)}">${esc(w)}</option>`).join('');
  const title = t('bridge.approve.title');
  return page(
    v,
    title,
    `${who(v, p.userName, p.csrf)}<h1>${esc(title)}</h1>${notice(p.error)}
<p>${esc(t('bridge.approve.compare'))}</p>
<p class="code" id="user-code">${esc(r.user_code)}</p>
<dl><dt>${esc(t('bridge.approve.device'))}</dt><dd id="device-name">${esc(r.device_name)}</dd><dt>${esc(t('bridge.approve.platform'))}</dt><dd id="device-platform">${esc(r.platform)}</dd>
<dt>${esc(t('bridge.approve.version'))}</dt><dd>${esc(r.client_version)}</dd><dt>${esc(t('bridge.approve.device_id'))}</dt><dd><code>${esc(r.device_id)}</code></dd>
<dt>${esc(t('bridge.approve.key'))}</dt><dd title="${esc(t('bridge.approve.key_hint'))}"><code>${esc(r.jwk_thumbprint.slice(0, 16))}…</code></dd></dl>
<form method="post" action="/device/decision">${hidden('csrf', p.csrf)}${hidden('user_code', r.user_code)}
${p.workspaces.length ? `<label for="workspace_id">${esc(t('bridge.approve.workspace'))}</label><select id="workspace_id" name="workspace_id">${options}</select>` : `<p class="error">${esc(t('bridge.approve.no_workspace'))}</p>`}
${p.workspaces.length ? `<button type="submit" name="action" value="approve" id="approve">${esc(t('bridge.approve.approve'))}</button>` : ''}
<button class="danger" type="submit" name="action" value="deny" id="deny">${esc(t('bridge.approve.deny'))}</button></form>`,
  );
}

/** The final screen after a decision: approval registers the device; it connects when its agent next runs. */
export function doneView(v: ViewLocale, p: { approved: boolean; deviceName: string; workspaceId?: string }): string {
  const t = v.t;
  const title = t(p.approved ? 'bridge.done.approved_title' : 'bridge.done.denied_title');
  const text = p.approved ? t('bridge.done.approved', { device: p.deviceName, workspace: p.workspaceId ?? '' }) : t('bridge.done.denied', { device: p.deviceName });
  return page(v, title, `<h1>${esc(title)}</h1><p class="ok" role="status" id="result">${esc(text)}</p>`);
}

/** A plain message page (rate limit, bad request). */
export function messageView(v: ViewLocale, title: string, message: string): string {
  return page(v, title, `<h1>${esc(title)}</h1><p class="error" role="alert" id="error">${esc(message)}</p><p><a href="/device">${esc(v.t('bridge.msg.again'))}</a></p>`);
}
