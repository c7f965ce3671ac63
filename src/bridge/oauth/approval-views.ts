/**
 * The approval page's HTML: server-rendered, self-contained (inline CSS, no scripts, no external
 * assets), every interpolated value escaped.
 */
import type { DeviceCodeRow, DeviceRow } from './oauth-store.js';

/** Escapes text for HTML element and attribute content. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const CSS = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:30rem;margin:3rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
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
table{width:100%;border-collapse:collapse;font-size:.9rem}td,th{text-align:left;padding:.3rem;border-top:1px solid #e2e5ea}
.who{font-size:.9rem;color:#5a6272;display:flex;justify-content:space-between;align-items:center}.who button{margin:0;padding:.1rem .6rem}
`;

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${CSS}</style></head><body><main>${body}</main></body></html>`;
}

function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`;
}

function notice(error?: string): string {
  return error ? `<p class="error" role="alert" id="error">${esc(error)}</p>` : '';
}

function who(userName: string, csrf: string): string {
  return `<div class="who"><span>Signed in as <strong id="signed-in-user">${esc(userName)}</strong>.</span>
<form method="post" action="/device/signout">${hidden('csrf', csrf)}<button class="secondary" type="submit">Sign out</button></form></div>`;
}

/** The sign-in form; the user code (if any) rides along so the user lands on the approval screen afterwards. */
export function signInView(p: { csrf: string; userCode: string; error?: string }): string {
  return page(
    'Sign in to approve a device',
    `<h1>Sign in to approve a device</h1>${notice(p.error)}
<form method="post" action="/device/signin">${hidden('csrf', p.csrf)}${hidden('user_code', p.userCode)}
<label for="username">User name</label><input id="username" name="username" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit" id="signin">Sign in</button></form>`,
  );
}

/** Asks for the code the device shows; also lists the user's devices with a revoke button each. */
export function enterCodeView(p: { csrf: string; userName: string; devices: DeviceRow[]; error?: string; message?: string }): string {
  const rows = p.devices
    .map(
      (d) => `<tr><td>${esc(d.name)}</td><td>${esc(d.platform)}</td><td>${esc(d.workspace_id)}</td><td>${d.revoked_at ? 'revoked' : 'active'}</td>
<td>${d.revoked_at ? '' : `<form method="post" action="/device/revoke">${hidden('csrf', p.csrf)}${hidden('device_id', d.id)}<button class="danger" type="submit" aria-label="Revoke ${esc(d.name)}">Revoke</button></form>`}</td></tr>`,
    )
    .join('');
  return page(
    'Connect a device',
    `${who(p.userName, p.csrf)}<h1>Connect a device</h1>${notice(p.error)}${p.message ? `<p class="ok" role="status">${esc(p.message)}</p>` : ''}
<form method="get" action="/device"><label for="user_code">Code shown on the device</label>
<input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" placeholder="XXXX-XXXX" required>
<button type="submit">Continue</button></form>
${p.devices.length ? `<h2>Your devices</h2><table><thead><tr><th>Name</th><th>Platform</th><th>Workspace</th><th>State</th><th></th></tr></thead><tbody>${rows}</tbody></table>` : ''}`,
  );
}

/** The decision screen: code to compare, what the device says about itself, workspace choice, approve/deny. */
export function approveView(p: { csrf: string; userName: string; request: DeviceCodeRow; workspaces: string[]; error?: string }): string {
  const r = p.request;
  const options = p.workspaces.map((w) => `<option value="${esc(w)}">${esc(w)}</option>`).join('');
  return page(
    'Approve this device?',
    `${who(p.userName, p.csrf)}<h1>Approve this device?</h1>${notice(p.error)}
<p>Check that this code matches the one shown on the device. If it does not, or you did not start a sign-in, deny.</p>
<p class="code" id="user-code">${esc(r.user_code)}</p>
<dl><dt>Device</dt><dd id="device-name">${esc(r.device_name)}</dd><dt>Platform</dt><dd id="device-platform">${esc(r.platform)}</dd>
<dt>Client version</dt><dd>${esc(r.client_version)}</dd><dt>Device id</dt><dd>${esc(r.device_id)}</dd>
<dt>Key</dt><dd title="RFC 7638 thumbprint of the device's public key">${esc(r.jwk_thumbprint.slice(0, 16))}…</dd></dl>
<form method="post" action="/device/decision">${hidden('csrf', p.csrf)}${hidden('user_code', r.user_code)}
${p.workspaces.length ? `<label for="workspace_id">Workspace</label><select id="workspace_id" name="workspace_id">${options}</select>` : '<p class="error">You are not a member of any workspace, so you can only deny.</p>'}
${p.workspaces.length ? '<button type="submit" name="action" value="approve" id="approve">Approve</button>' : ''}
<button class="danger" type="submit" name="action" value="deny" id="deny">Deny</button></form>`,
  );
}

/** The final screen after a decision. */
export function doneView(p: { approved: boolean; deviceName: string; workspaceId?: string }): string {
  return page(
    p.approved ? 'Device approved' : 'Device denied',
    p.approved
      ? `<h1>Device approved</h1><p class="ok" role="status" id="result">${esc(p.deviceName)} is now connected to workspace ${esc(p.workspaceId ?? '')}. You can close this window.</p>`
      : `<h1>Device denied</h1><p class="ok" role="status" id="result">The sign-in request from ${esc(p.deviceName)} was denied. Nothing was connected.</p>`,
  );
}

/** A plain message page (rate limit, bad request). */
export function messageView(title: string, message: string): string {
  return page(title, `<h1>${esc(title)}</h1><p class="error" role="alert" id="error">${esc(message)}</p><p><a href="/device">Start again</a></p>`);
}
