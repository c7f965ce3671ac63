/**
 * `/device` on a bridge whose config has no `users`: device sign-in is off. A person who opens the
 * approval address gets a page saying so and what the administrator sets, instead of a JSON error.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError } from './http-util.js';
import { esc } from './oauth/approval-views.js';
import { pageLocale } from './oauth/page-locale.js';

/** The sentence both the page and the JSON answer carry. */
export const SIGN_IN_DISABLED = 'Device sign-in is not enabled on this bridge.';
/** What the administrator does about it. */
export const SIGN_IN_ENABLE = 'The administrator enables it by adding `users` to the bridge config (each with an id, a password_hash made by `aios-device hash-password`, and the workspaces the user may connect devices to) and restarting the bridge. Until then devices connect with tokens from the config (`device_tokens`).';

/** The page, in the language the request asks for (the bridge catalogue's `bridge.disabled.*`). */
function disabledPage(req: IncomingMessage, url: URL): string {
  const { locale, t } = pageLocale(req, url);
  // Parameters are identifiers typed as they are: the sentence is escaped with its {placeholders} still in it,
  // then each placeholder becomes a <code> element.
  const html = (key: Parameters<typeof t>[0], codes: Record<string, string>): string =>
    esc(t(key)).replace(/\{([a-z_]+)\}/g, (whole, name: string) => (codes[name] !== undefined ? `<code>${esc(codes[name])}</code>` : whole));
  return `<!doctype html>
<html lang="${locale}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(t('bridge.disabled.title'))}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}code{background:#eee;padding:0 .2em}</style>
</head><body>
<h1 id="disabled">${esc(t('bridge.disabled.title'))}</h1>
<p>${html('bridge.disabled.what', { login: 'aios-device login' })}</p>
<p>${html('bridge.disabled.how', { users: 'users', id: 'id', hash: 'password_hash', hash_cmd: 'aios-device hash-password', workspaces: 'workspaces' })}</p>
<p>${html('bridge.disabled.until', { device_tokens: 'device_tokens' })}</p>
</body></html>
`;
}

/** Answers `/device` and below: the page for a browser, the same words as a JSON error for anything else. */
export async function signInDisabledMount(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
  if (url.pathname !== '/device' && !url.pathname.startsWith('/device/')) return false;
  if (req.method === 'GET' && /text\/html/.test(req.headers.accept ?? '')) {
    res.writeHead(404, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'", 'X-Content-Type-Options': 'nosniff' });
    res.end(disabledPage(req, url));
    return true;
  }
  sendError(res, 404, 'not_found', `${SIGN_IN_DISABLED} ${SIGN_IN_ENABLE}`);
  return true;
}
