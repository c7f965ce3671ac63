/**
 * The QA console (resources/console): a static page that signs in with a runtime token and uses the runtime
 * API, and its words. Served the same way by the single process and by every node of a cluster (the page holds
 * no state on the bridge: it calls the runtime API of whichever node serves it).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { serveStaticDir, underMount } from '../protocol/static-files.js';
import { PROJECT_ROOT } from '../version.js';
import { isLocale } from '../i18n/index.js';
import { bridgeEn, bridgeZh } from '../i18n/bridge.js';
import { sendError } from './http-util.js';
import { sendJson } from '../base/http-body.js';

/** The bridge console's page (resources/console). */
const CONSOLE_DIR = join(PROJECT_ROOT, 'resources', 'console');

/**
 * The console's words in one locale (`/console/i18n/<locale>.json`): the `bridge.console.*` keys of the bridge
 * catalogue, so the page and the approval page share one catalogue and one glossary.
 */
function sendConsoleWords(res: ServerResponse, locale: string): void {
  if (!isLocale(locale)) return sendError(res, 404, 'not_found', `No console catalogue for "${locale}".`);
  const table: Record<string, string> = locale === 'en' ? bridgeEn : bridgeZh;
  const words = Object.fromEntries(Object.entries(table).filter(([k]) => k.startsWith('bridge.console.')));
  sendJson(res, 200, words, { 'cache-control': 'no-cache' });
}

/** Serves `/console/…` (the page, its files and its words); false for any other path. */
export async function serveConsole(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
  const words = /^\/console\/i18n\/([A-Za-z-]+)\.json$/.exec(url.pathname);
  if (words && req.method === 'GET') {
    sendConsoleWords(res, words[1]!);
    return true;
  }
  if (!underMount(url.pathname, '/console')) return false;
  await serveStaticDir(req, res, url.pathname, '/console', CONSOLE_DIR);
  return true;
}
