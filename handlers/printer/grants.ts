/**
 * `grants.printers`: which printers the user shares with the agent, and by what name.
 *   - "*"                                   any printer queue of this machine (CUPS / Windows), by its name
 *   - "q1"                                  one queue
 *   - "ipp://host/ipp/print", "socket://host:9100"   one network printer, by its URI
 *   - { alias: front-desk, printer: "ipp://…", ask?: always }   the same, with the name the agent uses
 * A "*" grant never covers a network URI: an agent must not be able to send bytes to any host and port of
 * the network because a local queue was shared. No SDK import: the glue wraps this in a grant kind.
 */
import { PrinterFault } from './model.js';

/** One entry as written in the config. */
export type PrinterGrantEntry = string | { alias?: string; printer: string; ask?: 'always' };

/** The normal form (the kit's Grant shape for kind `printers`). */
export interface PrinterGrant {
  kind: 'printers';
  id: string;
  alias?: string;
  ask?: 'always';
}

const URI_RE = /^(ipps?|https?|socket):\/\//i;

/** True for a network printer URI (as opposed to a queue name). */
export function isUri(id: string): boolean {
  return URI_RE.test(id);
}

/** The canonical form of a printer id: URIs with lower-case scheme and host, queue names as written. */
export function canonicalId(id: string): string {
  if (!isUri(id)) return id.trim();
  try {
    const u = new URL(id.trim());
    const host = u.hostname.toLowerCase();
    return `${u.protocol.toLowerCase()}//${host}${u.port ? `:${u.port}` : ''}${u.pathname === '/' && u.protocol === 'socket:' ? '' : u.pathname}${u.search}`;
  } catch {
    throw new PrinterFault('invalid_arguments', `"${id}" is not a valid printer URI.`, { reason: 'bad_uri' });
  }
}

/** One config entry in normal form. */
export function normalizeGrant(e: PrinterGrantEntry): PrinterGrant {
  if (typeof e === 'string') return { kind: 'printers', id: e === '*' ? '*' : canonicalId(e) };
  return { kind: 'printers', id: canonicalId(e.printer), ...(e.alias ? { alias: e.alias } : {}), ...(e.ask ? { ask: e.ask } : {}) };
}

/** Whether a grant id covers a requested canonical id ('*' covers queue names, never URIs). */
export function covers(grantId: string, requested: string): boolean {
  if (grantId === requested) return true;
  return grantId === '*' && !isUri(requested);
}

/** The grant a call's `printer` argument names: by alias first, then by id, then a '*' grant. */
export function findGrant(grants: readonly PrinterGrant[], nameOrAlias: string): PrinterGrant | undefined {
  const byAlias = grants.find((g) => g.alias === nameOrAlias);
  if (byAlias) return byAlias;
  let id: string;
  try {
    id = canonicalId(nameOrAlias);
  } catch {
    return undefined;
  }
  const exact = grants.find((g) => g.id === id);
  if (exact) return exact;
  const star = grants.find((g) => covers(g.id, id));
  return star ? { kind: 'printers', id, ...(star.ask ? { ask: star.ask } : {}) } : undefined;
}

/** The message for a printer that is not shared (permission_denied, before any prompt). */
export function notGrantedMessage(name: string): string {
  return `Printer "${name}" is not shared with this agent; add it under grants.printers.`;
}
