/**
 * The `serial` grant kind: one entry of `grants.serial` in the agent config, either a port path or an
 * object with an alias, the port's settings and `ask: always`.
 */
import { Type } from '@sinclair/typebox';
import { defineGrantKind, listingCandidates, type Grant } from '../../src/sdk/index.js';
import { portKey } from './engine/listing.js';
import { checkPort } from './engine/port-check.js';
import type { PortSettings } from './engine/settings.js';
import { binding } from './native.js';

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

const SETTING_KEYS = ['baud', 'data_bits', 'parity', 'stop_bits', 'flow_control'] as const;

/** The port settings a grant carries (only the known keys; the kind's schema checked their values). */
export function grantSettings(g: Pick<Grant, 'settings'> | undefined): PortSettings {
  const out: Record<string, unknown> = {};
  for (const k of SETTING_KEYS) if (g?.settings?.[k] !== undefined) out[k] = g.settings[k];
  return out as PortSettings;
}

/** True when a granted id covers a requested port ('*' covers any; paths compare per platform). */
export function coversPort(grantId: string, requested: string, platform: NodeJS.Platform = process.platform): boolean {
  return grantId === '*' || portKey(platform, grantId) === portKey(platform, requested);
}

/** `grants.serial`: a path, or `{ path, alias?, ask?, baud?, data_bits?, parity?, stop_bits?, flow_control? }`. */
export const serialGrants = defineGrantKind({
  kind: 'serial',
  listing: { function: 'serial.list_ports', candidates: (o) => listingCandidates(o, 'ports', 'path', ['manufacturer', 'pnp_id']), idKey: 'path' },
  entry: SerialGrantEntry,
  normalize(e) {
    if (typeof e === 'string') return { id: e };
    const settings: Record<string, unknown> = {};
    for (const k of SETTING_KEYS) if (e[k] !== undefined) settings[k] = e[k];
    return { id: e.path, alias: e.alias, ask: e.ask, ...(Object.keys(settings).length ? { settings } : {}) };
  },
  covers: (grantId, requestedId) => coversPort(grantId, requestedId),
  // Before consent and before any open: `*` covers only ports the OS lists; an explicit path must be a terminal.
  validate: (id, grant) => checkPort(id, grant.id !== '*', { platform: process.platform, sys: '/sys', list: async () => (await binding()).list() }),
});
