/**
 * The bluetooth handler: Bluetooth Low Energy devices the user shared (`grants.bluetooth`), through
 * @abandonware/noble, loaded only when a call needs it. See docs/handlers/bluetooth.md.
 */
import { Type } from '@sinclair/typebox';
import { defineGrantKind, defineHandler, listingCandidates, optionalNative, type Grant } from '../../src/sdk/index.js';
import { bluetoothFunctions } from './functions.js';
import { normalizeBluetoothGrant, type BluetoothGrant } from './grants.js';
import { BleRuntime, parseOptions } from './runtime.js';
import { linuxWithoutBluetooth } from './noble-loader.js';
import type { Noble } from './noble-types.js';
import { UUID_PATTERN, normPeripheralId } from './uuid.js';

/** `grants.bluetooth`: `"*"`, a peripheral id, or `{ alias, id, services, ask }`. */
export const bluetoothGrants = defineGrantKind({
  kind: 'bluetooth',
  // Settings → Find devices: a five-second scan.
  listing: { function: 'bluetooth.scan', args: { duration_ms: 5000 }, candidates: (o) => listingCandidates(o, 'peripherals', 'id', ['name', 'address']), idKey: 'id' },
  entry: Type.Union([
    Type.String({ minLength: 1 }),
    Type.Object(
      {
        alias: Type.Optional(Type.String({ minLength: 1 })),
        id: Type.String({ minLength: 1 }),
        services: Type.Optional(Type.Array(Type.String({ pattern: UUID_PATTERN }))),
        ask: Type.Optional(Type.Literal('always')),
      },
      { additionalProperties: false },
    ),
  ]),
  normalize(e) {
    const g = normalizeBluetoothGrant(e);
    return { id: g.id, ...(g.alias ? { alias: g.alias } : {}), ...(g.ask ? { ask: g.ask } : {}), ...(g.settings ? { settings: g.settings } : {}) };
  },
  // Ids are compared in noble's form: "A4:C1:38:00:00:01" names the peripheral noble calls a4c138000001.
  covers: (grantId, requestedId) => grantId === '*' || grantId === normPeripheralId(requestedId),
});

/** A kit grant in the handler's own normal form. */
function fromGrant(g: Grant): BluetoothGrant {
  const services = (g.settings as { services?: string[] } | undefined)?.services;
  return { kind: 'bluetooth', id: g.id, ...(g.alias ? { alias: g.alias } : {}), ...(g.ask ? { ask: g.ask } : {}), ...(services ? { settings: { services } } : {}) };
}

export default defineHandler({
  name: 'bluetooth',
  title: 'Bluetooth devices',
  description: 'Find nearby Bluetooth Low Energy devices and read, write and subscribe to the characteristics of the ones the user shared.',
  grantKinds: [bluetoothGrants],
  create(env) {
    const log = env.log.child({ handler: 'bluetooth' });
    // noble's platform binding through the kit: a load failure becomes device_unavailable (no_adapter,
    // not_installed, …) or permission_denied (os_refused) with what to do. CommonJS: the instance is `default`.
    const platform = async () => (await optionalNative('@abandonware/noble', { feature: 'Bluetooth', load: () => import('@abandonware/noble') })).default as unknown as Noble;
    // bluetooth.state on a Linux without Bluetooth answers without loading noble (linuxWithoutBluetooth).
    const runtime = new BleRuntime(parseOptions(env.options), (method, line) => log.debug({ noble: method, line }, 'noble console output'), platform, linuxWithoutBluetooth);
    return {
      functions: bluetoothFunctions({ runtime, grants: () => env.grants.list('bluetooth').map(fromGrant) }),
      // Paused: let go of the devices (another program or phone may want them); the next call reconnects.
      onPause: () => runtime.closeConnections(),
      dispose: () => runtime.unload(),
    };
  },
});
