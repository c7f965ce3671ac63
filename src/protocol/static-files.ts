/**
 * Serving a page made of plain files from one folder (the local endpoint's `/ui/`, the bridge's
 * `/console/`): only plain file names directly in the folder, a fixed list of types, a strict
 * Content-Security-Policy, no CORS, no caching.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Content types of the files such a page is made of. */
export const STATIC_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** A page's policy: only its own scripts, styles and connections. */
export const STRICT_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

/** True for `/<mount>` and everything below it. */
export function underMount(pathname: string, mount: string): boolean {
  return pathname === mount || pathname.startsWith(mount + '/');
}

/** Serves GET/HEAD of `<mount>/…` from `dir`; anything that is not a plain listed file is 404. */
export async function serveStaticDir(req: IncomingMessage, res: ServerResponse, pathname: string, mount: string, dir: string, csp = STRICT_CSP): Promise<void> {
  const security = { 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-store' };
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD', ...security }).end();
    return;
  }
  if (pathname === mount) {
    res.writeHead(301, { Location: mount + '/', ...security }).end();
    return;
  }
  const name = pathname === mount + '/' ? 'index.html' : pathname.slice(mount.length + 1);
  const ext = /\.[a-z]+$/.exec(name)?.[0] ?? '';
  // One plain file name: no folders, no dot-files, no encoded tricks.
  if (!/^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/.test(name) || name.includes('..') || !STATIC_TYPES[ext]) {
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
  res.writeHead(200, { 'Content-Type': STATIC_TYPES[ext]!, 'Content-Length': body.length, 'Content-Security-Policy': csp, ...security });
  res.end(req.method === 'HEAD' ? undefined : body);
}
