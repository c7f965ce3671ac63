/**
 * `grants.bluetooth`: which peripherals (and which of their services) the user shared. An entry is
 * `"*"` (any peripheral), a peripheral id, or `{ alias, id, services }`. No SDK dependency: the functions
 * file wraps this as the kit's grant kind.
 */
import { normPeripheralId, normUuid } from './uuid.js';

/** One entry as written in the config. */
export type BluetoothGrantEntry = string | { alias?: string; id: string; services?: string[]; ask?: 'always' };

/** The normal form of a grant (KIT-API.md `Grant`), kind `bluetooth`. */
export interface BluetoothGrant {
  kind: 'bluetooth';
  /** The peripheral id, normalised (`*` = any). */
  id: string;
  alias?: string;
  ask?: 'always';
  /** Granted service UUIDs, normalised; absent = every service. */
  settings?: { services?: string[] };
}

/** One entry to its normal form; throws on a service that is not a UUID. */
export function normalizeBluetoothGrant(e: BluetoothGrantEntry): BluetoothGrant {
  if (typeof e === 'string') return { kind: 'bluetooth', id: e === '*' ? '*' : normPeripheralId(e) };
  const g: BluetoothGrant = { kind: 'bluetooth', id: e.id === '*' ? '*' : normPeripheralId(e.id) };
  if (e.alias) g.alias = e.alias;
  if (e.ask) g.ask = e.ask;
  if (e.services) {
    g.settings = {
      services: e.services.map((s) => {
        const u = normUuid(s);
        if (!u) throw new Error(`grants.bluetooth: "${s}" is not a Bluetooth service UUID`);
        return u;
      }),
    };
  }
  return g;
}

/**
 * The grant that covers `nameOrAlias`: by alias first, then by id, then a `*` grant (returned with the
 * requested id, as the kit's `grants.find` does). Undefined when nothing covers it.
 */
export function findBluetoothGrant(grants: readonly BluetoothGrant[], nameOrAlias: string): BluetoothGrant | undefined {
  const byAlias = grants.find((g) => g.alias !== undefined && g.alias === nameOrAlias);
  if (byAlias) return byAlias;
  const id = normPeripheralId(nameOrAlias);
  const byId = grants.find((g) => g.id === id);
  if (byId) return byId;
  const any = grants.find((g) => g.id === '*');
  return any ? { ...any, id } : undefined;
}

/** The alias the user gave a peripheral, if any (for scan results). */
export function aliasOf(grants: readonly BluetoothGrant[], id: string, address?: string): string | undefined {
  const keys = [normPeripheralId(id), ...(address ? [normPeripheralId(address)] : [])];
  return grants.find((g) => g.alias !== undefined && keys.includes(g.id))?.alias;
}

/** True when the grant lets a caller use `serviceUuid` (normalised). */
export function coversService(g: BluetoothGrant, serviceUuid: string): boolean {
  const list = g.settings?.services;
  return !list || list.includes(serviceUuid);
}
