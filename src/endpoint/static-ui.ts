/**
 * The tray UI served as a web page at `/ui/` by the local endpoint, so that the same page works in a
 * browser as in the Electron window (the serving rules are `serveStaticDir`'s).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATIC_TYPES, STRICT_CSP, serveStaticDir, underMount } from '../protocol/static-files.js';

/** The page's policy: only its own scripts, styles and connections (same as the Electron window's). */
export const RENDERER_CSP = STRICT_CSP;

/** Content types of the files the page is made of (shared with the Electron shell's own scheme). */
export const UI_TYPES = STATIC_TYPES;

/** True for `/ui` and everything below it. */
export function isUiPath(pathname: string): boolean {
  return underMount(pathname, '/ui');
}

/** Serves GET/HEAD of `/ui/…` from `dir`; anything that is not a plain listed file is 404. */
export function serveUi(req: IncomingMessage, res: ServerResponse, pathname: string, dir: string): Promise<void> {
  return serveStaticDir(req, res, pathname, '/ui', dir, RENDERER_CSP);
}
