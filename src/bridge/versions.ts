/**
 * Comparing dotted release versions (major.minor.patch, pre-release tags sort before the release).
 */

/** Negative when a < b, 0 when equal, positive when a > b. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const [core = '', pre] = v.split('-', 2);
    return { nums: core.split('.').map((x) => Number.parseInt(x, 10) || 0), pre };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < 3; i++) {
    const d = (x.nums[i] ?? 0) - (y.nums[i] ?? 0);
    if (d) return d;
  }
  if (x.pre && !y.pre) return -1;
  if (!x.pre && y.pre) return 1;
  return (x.pre ?? '').localeCompare(y.pre ?? '');
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
    if (v.split('.')[0] !== major || compareVersions(v, offered) > 0) continue;
    if (best === null || compareVersions(v, best) > 0) best = v;
  }
  return best;
}
