/**
 * Where the window's page lives (`aios-ui://app/…`), how to recognise it, and the policy it is served
 * with. No Electron import, so the IPC sender check that uses it runs in plain Node tests.
 */

/** Scheme of the renderer's URLs. */
export const RENDERER_SCHEME = 'aios-ui';
/** Host of the renderer's URLs. */
export const RENDERER_HOST = 'app';

/** The URL the window loads. */
export const RENDERER_URL = `${RENDERER_SCHEME}://${RENDERER_HOST}/index.html`;

/** The page's Content-Security-Policy: one definition, shared with the local endpoint's `/ui/` route. */
export { RENDERER_CSP } from '../src/shell.js';

/** True for a URL of our own page, the only sender the IPC handlers answer. */
export function isRendererUrl(url: string): boolean {
  // Parsed by hand: WHATWG URL gives custom schemes an opaque origin, so origin comparison cannot work.
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(\/|$)/i.exec(url);
  return m !== null && m[1]!.toLowerCase() === RENDERER_SCHEME && m[2]!.toLowerCase() === RENDERER_HOST;
}
