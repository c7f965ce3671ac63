/**
 * The window's page comes from a private `aios-ui://app/` scheme that serves electron/renderer/ (Electron's
 * security checklist: prefer a custom protocol to `file://`). Every response carries the strict CSP of renderer-url.ts.
 */
import { protocol } from 'electron';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { UI_TYPES as TYPES } from '../src/shell.js';
import { RENDERER_CSP, RENDERER_HOST, RENDERER_SCHEME } from './renderer-url.js';

/** Declares the scheme; must run before the app is ready. */
// supportFetchAPI: the page fetches its string catalogues (en.json, zh-CN.json) from the scheme.
export function registerRendererScheme(): void {
  protocol.registerSchemesAsPrivileged([{ scheme: RENDERER_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } }]);
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
