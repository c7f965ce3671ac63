/**
 * DNS-rebinding defence (PROTOCOL.md §8): a request is served only when its `Host` names loopback, and a
 * browser `Origin`, when present, is a loopback origin too.
 */

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** Host name of a `Host` header without its port, lower-cased; undefined when malformed. */
function hostName(host: string): string | undefined {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end < 0) return undefined;
    const rest = h.slice(end + 1);
    if (rest && !/^:\d{1,5}$/.test(rest)) return undefined;
    return h.slice(0, end + 1);
  }
  const m = /^([^:]+)(?::(\d{1,5}))?$/.exec(h);
  return m?.[1];
}

/** True when the `Host` header names a loopback address (any port). A missing header is refused. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = hostName(host);
  if (!name) return false;
  const bare = name.endsWith('.') ? name.slice(0, -1) : name;
  return LOOPBACK_NAMES.has(bare) || bare.endsWith('.localhost');
}

/** True when there is no `Origin` (non-browser client) or it is an http(s) origin on a loopback host. */
export function isAllowedOrigin(origin: string | undefined): boolean {
  if (origin === undefined) return true;
  try {
    const u = new URL(origin);
    return (u.protocol === 'http:' || u.protocol === 'https:') && isLoopbackHost(u.host);
  } catch {
    return false;
  }
}
