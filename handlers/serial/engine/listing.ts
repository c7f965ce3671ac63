/**
 * The answer of serial.list_ports from the bindings' list output and the grants: granted ports first
 * (with their alias and the device's details), then the other ports the OS lists, named only. A
 * granted port the OS does not list (a virtual port, or an unplugged device) is still shown, as absent.
 * Nothing here opens a port.
 */
import type { PortInfo } from './binding.js';

/** A granted port as the engine sees it ('*' = any port). */
export interface PortGrant {
  path: string;
  alias?: string | undefined;
}

/** One entry of the answer. */
export interface ListedPort {
  path: string;
  granted: boolean;
  alias?: string;
  /** False for a granted port the OS does not list (virtual, or not plugged in). */
  listed: boolean;
  manufacturer?: string;
  serial_number?: string;
  vendor_id?: string;
  product_id?: string;
  pnp_id?: string;
  location_id?: string;
}

/**
 * The comparable form of a port path on a platform:
 * - Windows: COM names are case-insensitive and may be written `\\.\COM10`;
 * - macOS: `/dev/tty.X` (dial-in, what the bindings list) and `/dev/cu.X` (call-out) are one device;
 * - Linux: exact, except that a `/dev/serial/by-id/NAME` grant names the port whose udev pnpId is NAME.
 */
export function portKey(platform: NodeJS.Platform, path: string): string {
  if (platform === 'win32') return path.replace(/^\\\\\.\\/, '').toUpperCase();
  if (platform === 'darwin') return path.replace(/^\/dev\/(?:cu|tty)\./, '/dev/*.');
  return path;
}

/** True when a grant's path names this listed port. */
export function grantNames(platform: NodeJS.Platform, grantPath: string, info: PortInfo): boolean {
  if (portKey(platform, grantPath) === portKey(platform, info.path)) return true;
  if (platform === 'linux' && info.pnpId) return grantPath === `/dev/serial/by-id/${info.pnpId}`;
  return false;
}

function details(info: PortInfo): Partial<ListedPort> {
  const out: Partial<ListedPort> = {};
  if (info.manufacturer) out.manufacturer = info.manufacturer;
  if (info.serialNumber) out.serial_number = info.serialNumber;
  if (info.vendorId) out.vendor_id = info.vendorId.toLowerCase();
  if (info.productId) out.product_id = info.productId.toLowerCase();
  if (info.pnpId) out.pnp_id = info.pnpId;
  if (info.locationId) out.location_id = info.locationId;
  return out;
}

/** Builds the list: granted ports in grant order, then the rest sorted by path. */
export function listPorts(platform: NodeJS.Platform, infos: readonly PortInfo[], grants: readonly PortGrant[]): ListedPort[] {
  const any = grants.some((g) => g.path === '*');
  const used = new Set<PortInfo>();
  const out: ListedPort[] = [];
  for (const g of grants) {
    if (g.path === '*') continue;
    const info = infos.find((i) => grantNames(platform, g.path, i));
    if (info) used.add(info);
    out.push({ path: g.path, granted: true, ...(g.alias ? { alias: g.alias } : {}), listed: !!info, ...(info ? details(info) : {}) });
  }
  const rest = infos.filter((i) => !used.has(i)).sort((a, b) => a.path.localeCompare(b.path));
  for (const i of rest) {
    // A `*` grant shares every port: each is listed with its details. Otherwise other ports are only named.
    out.push(any ? { path: i.path, granted: true, listed: true, ...details(i) } : { path: i.path, granted: false, listed: true });
  }
  return out;
}
