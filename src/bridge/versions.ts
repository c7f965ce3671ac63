/**
 * Version orders: client versions are semver (pre-releases sort before their release, numerically by
 * identifier: `1.0.0-beta.2` < `1.0.0-beta.10` < `1.0.0-rc.1` < `1.0.0`); protocol versions are dotted
 * numbers ("1.0", "1.1", "1.2") that semver rejects, with their own numeric compare.
 */
import semver from 'semver';

/**
 * Semver order of two client versions: negative when a < b, 0 when equal, positive when a > b. A string
 * that is not a semver version sorts below every version (and equal to another such string).
 */
export function compareVersions(a: string, b: string): number {
  const x = semver.valid(a);
  const y = semver.valid(b);
  if (x && y) return semver.compare(x, y);
  if (!x && !y) return 0;
  return x ? 1 : -1;
}

/**
 * Whether a client is below the bridge's `min_client_version` (semver order). The default minimum
 * `0.0.0` means no minimum: then no client is below it, not even one whose version is not semver.
 */
export function isClientOutdated(clientVersion: string, minClientVersion: string): boolean {
  if (minClientVersion === '0.0.0') return false;
  return compareVersions(clientVersion, minClientVersion) < 0;
}

/** Numeric order of dotted protocol versions ("1.0" < "1.2" < "1.10"); missing parts count as 0. */
export function compareProtocolVersions(a: string, b: string): number {
  const x = a.split('.').map((n) => Number.parseInt(n, 10) || 0);
  const y = b.split('.').map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d) return d;
  }
  return 0;
}

/** The protocol versions this bridge speaks (PROTOCOL.md "Changes"), oldest first. */
export const BRIDGE_PROTOCOL_VERSIONS = ['1.0', '1.1', '1.2'] as const;

/**
 * The version a session speaks: the highest one the bridge supports that is not above the client's
 * offer, within the offer's major version; null when there is none (`unsupported_protocol_version`).
 */
export function negotiateProtocolVersion(offered: unknown, supported: readonly string[] = BRIDGE_PROTOCOL_VERSIONS): string | null {
  if (typeof offered !== 'string' || !/^\d+(\.\d+){0,2}$/.test(offered)) return null;
  const [major] = offered.split('.');
  let best: string | null = null;
  for (const v of supported) {
    if (v.split('.')[0] !== major || compareProtocolVersions(v, offered) > 0) continue;
    if (best === null || compareProtocolVersions(v, best) > 0) best = v;
  }
  return best;
}
