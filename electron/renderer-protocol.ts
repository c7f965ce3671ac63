/**
 * The window's page comes from a private `aios-ui://app/` scheme that serves electron/renderer/ (Electron's
 * security checklist: prefer a custom protocol to `file://`). Every response carries the strict CSP below.
 */
import { protocol } from 'electron';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';

/** Scheme and host of the renderer's URLs. */
export const RENDERER_SCHEME = 'aios-ui';
const RENDERER_HOST = 'app';

/** The URL the window loads. */
export const RENDERER_URL = `${RENDERER_SCHEME}://${RENDERER_HOST}/index.html`;

/**
 * The page's Content-Security-Policy: only its own scripts and styles, no inline code, no plugins, no
 * framing. In Electron the page talks to the agent over IPC; from the local endpoint's `/ui/` route the
 * same policy's `connect-src 'self'` lets it reach `/health` and `WS /rpc` on that origin only.
 */
export const RENDERER_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** True for a URL of our own page, the only sender the IPC handlers answer. */
export function isRendererUrl(url: string): boolean {
  // Parsed by hand: WHATWG URL gives custom schemes an opaque origin, so origin comparison cannot work.
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(\/|$)/i.exec(url);
  return m !== null && m[1]!.toLowerCase() === RENDERER_SCHEME && m[2]!.toLowerCase() === RENDERER_HOST;
}

/** Declares the scheme; must run before the app is ready. */
export function registerRendererScheme(): void {
  protocol.registerSchemesAsPrivileged([{ scheme: RENDERER_SCHEME, privileges: { standard: true, secure: true } }]);
}

/** Serves files of `dir` (and nothing outside it) on the scheme; call once the app is ready. */
export function serveRenderer(dir: string): void {
  const root = normalize(dir + sep);
  protocol.handle(RENDERER_SCHEME, async (request) => {
    const url = new URL(request.url);
    const rel = decodeURIComponent(url.pathname).replace(/^\/+/, '') || 'index.html';
    const file = normalize(join(root, rel));
    const type = TYPES[extname(file)];
    if (request.method !== 'GET' || url.host !== RENDERER_HOST || !file.startsWith(root) || !type) {
      return new Response('Not found', { status: 404 });
    }
    try {
      const body = await readFile(file);
      return new Response(body, {
        headers: { 'Content-Type': type, 'Content-Security-Policy': RENDERER_CSP, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' },
      });
    } catch {
      return new Response('Not found', { status: 404 });
    }
  });
}
