/**
 * `/device` on a bridge whose config has no `users`: device sign-in is off. A person who opens the
 * approval address gets a page saying so and what the administrator sets, instead of a JSON error.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError } from './http-util.js';

/** The sentence both the page and the JSON answer carry. */
export const SIGN_IN_DISABLED = 'Device sign-in is not enabled on this bridge.';
/** What the administrator does about it. */
export const SIGN_IN_ENABLE = 'The administrator enables it by adding `users` to the bridge config (each with an id, a password_hash made by `aios-device hash-password`, and the workspaces the user may connect devices to) and restarting the bridge. Until then devices connect with tokens from the config (`device_tokens`).';

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Device sign-in is not enabled</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}code{background:#eee;padding:0 .2em}</style>
</head><body>
<h1 id="disabled">Device sign-in is not enabled on this bridge</h1>
<p>This bridge does not offer <code>aios-device login</code>: its configuration lists no users who could approve a device.</p>
<p>The administrator enables it by adding <code>users</code> to the bridge config, each with an <code>id</code>, a
<code>password_hash</code> made by <code>aios-device hash-password</code>, and the <code>workspaces</code> the user may connect
devices to, and then restarting the bridge.</p>
<p>Until then, devices connect with tokens written in the bridge config (<code>device_tokens</code>).</p>
</body></html>
`;

/** Answers `/device` and below: the page for a browser, the same words as a JSON error for anything else. */
export async function signInDisabledMount(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
  if (url.pathname !== '/device' && !url.pathname.startsWith('/device/')) return false;
  if (req.method === 'GET' && /text\/html/.test(req.headers.accept ?? '')) {
    res.writeHead(404, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'", 'X-Content-Type-Options': 'nosniff' });
    res.end(PAGE);
    return true;
  }
  sendError(res, 404, 'not_found', `${SIGN_IN_DISABLED} ${SIGN_IN_ENABLE}`);
  return true;
}
