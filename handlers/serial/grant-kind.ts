/**
 * The `serial` grant kind: one entry of `grants.serial` in the agent config, either a port path or an
 * object with an alias, the port's settings and `ask: always`. Shaped for the kit's `defineGrantKind`
 * (KIT-API.md); until the kit lands, the functions resolve grants with `normalizeSerialGrant` themselves.
 */
import { Type, type Static } from '@sinclair/typebox';
import { portKey } from './engine/listing.js';
import type { PortSettings } from './engine/settings.js';

/** Port settings a grant may preset (a call may override them). */
export const SettingsProps = {
  baud: Type.Optional(Type.Integer({ minimum: 50, maximum: 4_000_000, description: 'Baud rate (default 9600).' })),
  data_bits: Type.Optional(Type.Union([Type.Literal(5), Type.Literal(6), Type.Literal(7), Type.Literal(8)], { description: 'Data bits (default 8).' })),
  parity: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('even'), Type.Literal('odd'), Type.Literal('mark'), Type.Literal('space')], { description: 'Parity (default none).' })),
  stop_bits: Type.Optional(Type.Union([Type.Literal(1), Type.Literal(1.5), Type.Literal(2)], { description: 'Stop bits (default 1).' })),
  flow_control: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('rtscts'), Type.Literal('xonxoff')], { description: 'Flow control (default none).' })),
};

/** JSON Schema of one `grants.serial` entry. */
export const SerialGrantEntry = Type.Union([
  Type.String({ minLength: 1, description: 'A port path (/dev/ttyUSB0, /dev/cu.usbserial-1410, COM3), or * for every port.' }),
  Type.Object(
    {
      path: Type.String({ minLength: 1 }),
      alias: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' })),
      ask: Type.Optional(Type.Literal('always')),
      ...SettingsProps,
    },
    { additionalProperties: false },
  ),
]);
/** One entry as written in the config. */
export type SerialGrantEntry = Static<typeof SerialGrantEntry>;

/** The kit's normal form of a grant (KIT-API.md), with this kind's settings. */
export interface SerialGrant {
  kind: 'serial';
  id: string;
  alias?: string;
  ask?: 'always';
  settings?: PortSettings;
}

/** One config entry -> the normal form. */
export function normalizeSerialGrant(e: SerialGrantEntry): SerialGrant {
  if (typeof e === 'string') return { kind: 'serial', id: e };
  const settings: PortSettings = {};
  if (e.baud !== undefined) settings.baud = e.baud;
  if (e.data_bits !== undefined) settings.data_bits = e.data_bits;
  if (e.parity !== undefined) settings.parity = e.parity;
  if (e.stop_bits !== undefined) settings.stop_bits = e.stop_bits;
  if (e.flow_control !== undefined) settings.flow_control = e.flow_control;
  return { kind: 'serial', id: e.path, ...(e.alias ? { alias: e.alias } : {}), ...(e.ask ? { ask: e.ask } : {}), ...(Object.keys(settings).length ? { settings } : {}) };
}

/** The grant kind's definition, as `defineGrantKind` takes it. */
export const serialGrantKind = {
  kind: 'serial',
  entry: SerialGrantEntry,
  normalize: normalizeSerialGrant,
  covers: (grantId: string, requestedId: string) => coversPort(grantId, requestedId),
} as const;

/** True when a granted id covers a requested port ('*' covers any; paths compare per platform). */
export function coversPort(grantId: string, requested: string, platform: NodeJS.Platform = process.platform): boolean {
  return grantId === '*' || portKey(platform, grantId) === portKey(platform, requested);
}

/**
 * The grant a call's `port` names: by alias first, then by path, then a '*' grant (which answers with
 * the requested path). Undefined when the port is not granted.
 */
export function findSerialGrant(grants: readonly SerialGrant[], port: string, platform: NodeJS.Platform = process.platform): SerialGrant | undefined {
  return (
    grants.find((g) => g.alias === port) ??
    grants.find((g) => g.id !== '*' && coversPort(g.id, port, platform)) ??
    (grants.some((g) => g.id === '*') ? { ...grants.find((g) => g.id === '*')!, id: port } : undefined)
  );
}
