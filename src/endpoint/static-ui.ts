/**
 * The tray UI served as a web page at `/ui/` by the local endpoint, so that the same page works in a
 * browser as in the Electron window. Only plain files directly in the renderer folder, a fixed list of
 * types, a strict Content-Security-Policy, and no CORS.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The page's policy: only its own scripts, styles and connections (same as the Electron window's). */
export const RENDERER_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

/** Content types of the files the page is made of (shared with the Electron shell's own scheme). */
export const UI_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** True for `/ui` and everything below it. */
export function isUiPath(pathname: string): boolean {
  return pathname === '/ui' || pathname.startsWith('/ui/');
}

/** Serves GET/HEAD of `/ui/…` from `dir`; anything that is not a plain listed file is 404. */
export async function serveUi(req: IncomingMessage, res: ServerResponse, pathname: string, dir: string): Promise<void> {
  const security = { 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-store' };
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD', ...security }).end();
    return;
  }
  if (pathname === '/ui') {
    res.writeHead(301, { Location: '/ui/', ...security }).end();
    return;
  }
  const name = pathname === '/ui/' ? 'index.html' : pathname.slice(4);
  const ext = /\.[a-z]+$/.exec(name)?.[0] ?? '';
  // One plain file name: no folders, no dot-files, no encoded tricks.
  if (!/^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/.test(name) || name.includes('..') || !UI_TYPES[ext]) {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', ...security }).end('Not found');
    return;
  }
  let body: Buffer;
  try {
    body = await readFile(join(dir, name));
  } catch {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', ...security }).end('Not found');
    return;
  }
  res.writeHead(200, { 'Content-Type': UI_TYPES[ext]!, 'Content-Length': body.length, 'Content-Security-Policy': RENDERER_CSP, ...security });
  res.end(req.method === 'HEAD' ? undefined : body);
}
