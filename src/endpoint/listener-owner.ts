/**
 * Who owns the socket listening on a loopback address (issue 27, finding 3): before a client sends the
 * local token to the port `endpoint.json` names, it checks that the listener belongs to the agent's OS
 * user, so another local user who took the port (a stale `endpoint.json`, or the configured port taken
 * first) never receives the token. Linux: the LISTEN rows of `/proc/net/tcp` and `/proc/net/tcp6` carry
 * the owning uid. Elsewhere the owner cannot be read this way (`undefined`).
 */
import { readFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';

const LISTEN = '0A';

/** `127.0.0.1` → `0100007F` (the kernel's byte order on little-endian hosts, as /proc prints it). */
function hexV4(addr: string): string {
  return addr
    .split('.')
    .map((n) => Number(n).toString(16).padStart(2, '0').toUpperCase())
    .reverse()
    .join('');
}

/** `::1` → /proc's form: four 32-bit words, each in host (little-endian) byte order. */
function hexV6(addr: string): string | undefined {
  if (addr !== '::1') return undefined;
  return '00000000000000000000000001000000';
}

/**
 * The uid owning the TCP listener on this loopback URL's address and port: a number, `null` when nothing
 * listens there, `undefined` when this system does not say (not Linux, no /proc).
 */
export async function loopbackListenerUid(url: string): Promise<number | null | undefined> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  const v4 = isIPv4(host) ? hexV4(host) : host === 'localhost' ? hexV4('127.0.0.1') : undefined;
  const v6 = hexV6(host);
  const portHex = port.toString(16).toUpperCase().padStart(4, '0');
  let seen = false;
  for (const [file, want] of [['/proc/net/tcp', v4], ['/proc/net/tcp6', v6]] as const) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
      seen = true;
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 8 || f[3] !== LISTEN) continue;
      const [addr, p] = (f[1] ?? '').split(':');
      if (p !== portHex) continue;
      // A wildcard listener (0.0.0.0 / ::) answers loopback too.
      const wildcard = /^0+$/.test(addr ?? '');
      if (wildcard || (want !== undefined && addr === want)) return Number(f[7]);
    }
  }
  return seen ? null : undefined;
}
