/**
 * The bluetooth.* functions: descriptors, grant checks and error mapping over the operations. This is the
 * only file of the handler that touches the SDK.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { WireError, defineFunction, fail, type AnyFunctionDefinition, type CallResource, type DescriptorInput, type Message } from '../../src/sdk/index.js';
import { BleError } from './errors.js';
import { aliasOf, coversService, findBluetoothGrant, type BluetoothGrant } from './grants.js';
import * as ops from './operations.js';
import type { BleRuntime } from './runtime.js';
import { UUID_PATTERN, gattName, normUuid } from './uuid.js';

/** What the glue needs from the host. */
export interface BleGlueEnv {
  readonly runtime: BleRuntime;
  /** The current grants of kind `bluetooth`, in normal form. */
  grants(): BluetoothGrant[];
}

const Device = Type.String({ minLength: 1, maxLength: 128, examples: ['fridge'], description: 'The peripheral: its alias from grants.bluetooth, or its id (as bluetooth.scan reports it).' });
const Uuid = (what: string, example: string) => Type.String({ pattern: UUID_PATTERN, examples: [example], description: `${what} UUID: 16-bit ("181a"), 32-bit or 128-bit (with or without its four dashes), any case.` });
const Target = { device: Device, service: Uuid('Service', '181a'), characteristic: Uuid('Characteristic', '2a6e') };
const DeviceOut = Type.Object({ id: Type.String(), alias: Type.Optional(Type.String()) }, { additionalProperties: false });
const closed = <P extends Record<string, TSchema>>(p: P) => Type.Object(p, { additionalProperties: false });

const READ_RISK = { read_only: true, destructive: false, idempotent: true, physical: false };

function descriptor(d: Omit<DescriptorInput, 'version' | 'capability_type' | 'access' | 'cancellable' | 'locks'> & Partial<DescriptorInput>): DescriptorInput {
  return { version: '1.0.0', capability_type: 'device', access: 'restricted', cancellable: true, locks: [], ...d };
}

/** The wire error for a Bluetooth failure (the one place they are mapped). */
export function toWireError(e: unknown, sideEffects: 'none' | 'possible' = 'none'): unknown {
  if (!(e instanceof BleError)) return e;
  const details = { reason: e.fault };
  switch (e.fault) {
    case 'os_refused':
      return new WireError('permission_denied', e.message, { details, sideEffects: 'none' });
    case 'no_such_characteristic':
    case 'not_supported':
      return new WireError('invalid_arguments', e.message, { details, sideEffects: 'none' });
    default:
      return new WireError('device_unavailable', e.message, { details, retryable: true, sideEffects: e.fault === 'disconnected' ? sideEffects : 'none' });
  }
}

/** The grant covering `device` (and `service`, when given); permission_denied otherwise. */
export function resolveTarget(ge: BleGlueEnv, device: string, service?: string): { grant: BluetoothGrant; label: string; service?: string } {
  const grant = findBluetoothGrant(ge.grants(), device);
  if (!grant) fail('permission_denied', `Bluetooth device "${device}" is not shared with this agent; add it under grants.bluetooth.`, { details: { reason: 'not_granted' } });
  if (service === undefined) return { grant, label: grant.alias ?? grant.id };
  const s = normUuid(service) ?? service;
  if (!coversService(grant, s)) fail('permission_denied', `Service ${s} of Bluetooth device "${grant.alias ?? grant.id}" is not shared with this agent; add it to the grant's services.`, { details: { reason: 'service_not_granted' } });
  return { grant, label: grant.alias ?? grant.id, service: s };
}

const deviceOut = (g: BluetoothGrant) => (g.alias ? { id: g.id, alias: g.alias } : { id: g.id });
const charLabel = (u: string) => {
  const n = normUuid(u) ?? u;
  const name = gattName(n);
  return name ? `${name} (${n})` : n;
};

/** Wraps a run so Bluetooth failures become wire errors. */
async function mapped<T>(fn: () => Promise<T>, sideEffects: 'none' | 'possible' = 'none'): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw toWireError(e, sideEffects);
  }
}

/** noble's session and pool (loads noble on first use; its failures are typed, mapped by `mapped`). */
function rt(ge: BleGlueEnv) {
  return ge.runtime.get();
}

/**
 * The peripheral a call touches, resolved before policy and consent: a peripheral or service that is not
 * shared ends the call `rejected/permission_denied` here, before anyone is asked and before anything is
 * sent to the device. One lock per peripheral: `ble:<id>`.
 */
function target(ge: BleGlueEnv, device: string, service?: string): CallResource[] {
  const { grant } = resolveTarget(ge, device, service);
  return [{ kind: 'bluetooth', id: grant.id, ...(grant.alias ? { label: grant.alias } : {}), ...(grant.ask ? { ask: grant.ask } : {}), lock: `ble:${grant.id}` }];
}

/** The name people see for the call's peripheral (its alias, else its id). */
const shown = (r: readonly CallResource[], device: string) => r[0]?.label ?? r[0]?.id ?? device;

/** A prompt sentence from the handler's catalogue (handlers/bluetooth/i18n). */
const msg = (key: string, params: Record<string, string | number>): Message => ({ key, params });

// ---- bluetooth.state -------------------------------------------------------------------------------

const StateIn = closed({});
const StateOut = closed({
  present: Type.Boolean(),
  powered: Type.Boolean(),
  authorised: Type.Boolean(),
  reason: Type.Optional(Type.Union(['no_adapter', 'not_installed', 'unsupported_platform', 'powered_off', 'os_refused', 'not_ready'].map((r) => Type.Literal(r)))),
  advice: Type.Optional(Type.String()),
});

const ADVICE: Record<string, string> = {
  no_adapter: 'This device has no Bluetooth adapter the system can use; plug one in or enable Bluetooth.',
  not_installed: 'Bluetooth support is not installed with this agent; reinstall it with its optional dependencies.',
  unsupported_platform: 'Bluetooth is not supported on this operating system.',
  powered_off: 'Bluetooth is switched off; switch it on in the system settings.',
  os_refused: 'The operating system has not allowed this program to use Bluetooth; allow it (macOS: System Settings > Privacy & Security > Bluetooth; Linux: see the capabilities in docs/handlers/bluetooth.md).',
  not_ready: 'The adapter is starting or resetting; try again in a moment.',
};

function stateFn(ge: BleGlueEnv) {
  return defineFunction<Static<typeof StateIn>, Static<typeof StateOut>>({
    descriptor: descriptor({
      id: 'bluetooth.state',
      name: 'Bluetooth status',
      description: 'Says whether this device has a Bluetooth adapter, whether it is switched on and allowed to this program, and what to do if not. A device without Bluetooth is an answer (present: false), not an error.',
      access: 'public',
      permission_level: 'public',
      risk: READ_RISK,
      confirmation: 'never',
      examples: ['Does this computer have Bluetooth?'],
      input_schema: StateIn,
      output_schema: StateOut,
      timeout_ms_default: 10_000,
      timeout_ms_max: 30_000,
    }),
    describe: () => msg('bluetooth.state', {}),
    async run(_a, ctx) {
      const s = await ge.runtime.state(ctx.signal);
      return s.reason ? { ...s, advice: ADVICE[s.reason] ?? '' } : s;
    },
  });
}

// ---- bluetooth.scan --------------------------------------------------------------------------------

const ScanIn = closed({
  duration_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 30_000, default: 5000, description: 'How long to listen (at most 30 s).' })),
  services: Type.Optional(Type.Array(Uuid('Advertised service', '181a'), { maxItems: 16, description: 'Only devices advertising one of these services.' })),
  name_prefix: Type.Optional(Type.String({ maxLength: 64, description: 'Only devices whose advertised name starts with this.' })),
  min_rssi: Type.Optional(Type.Integer({ minimum: -127, maximum: 20, description: 'Only devices heard at least this strongly (dBm).' })),
  max_results: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'Stop once this many devices are found.' })),
});
const Hit = closed({
  id: Type.String(),
  address: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  rssi: Type.Integer(),
  services: Type.Array(Type.String()),
  manufacturer_data: Type.Optional(Type.String({ description: 'hex' })),
  connectable: Type.Optional(Type.Boolean()),
  alias: Type.Optional(Type.String()),
});
const ScanOut = closed({ peripherals: Type.Array(Hit), complete: Type.Boolean({ description: 'false when the scan stopped early at max_results' }) });

function scanFn(ge: BleGlueEnv) {
  return defineFunction<Static<typeof ScanIn>, Static<typeof ScanOut>>({
    descriptor: descriptor({
      id: 'bluetooth.scan',
      name: 'Find nearby Bluetooth devices',
      description: 'Listens for Bluetooth Low Energy advertisements for a bounded time (at most 30 s) and lists each device once: id, address where the system gives one, name, signal strength, advertised services, manufacturer data (hex) and its alias if the user shared it. Filters: services, name prefix, minimum RSSI. Needs Bluetooth to be shared (any grants.bluetooth entry).',
      permission_level: 'low',
      risk: READ_RISK,
      confirmation: 'policy',
      examples: ['Which Bluetooth thermometers are nearby?'],
      input_schema: ScanIn,
      output_schema: ScanOut,
      timeout_ms_default: 40_000,
      timeout_ms_max: 60_000,
    }),
    // No one peripheral: nothing to lock or match, but Bluetooth must be shared at all.
    resources() {
      if (!ge.grants().length) fail('permission_denied', 'Bluetooth is not shared with this agent; add an entry under grants.bluetooth.', { details: { reason: 'not_granted' } });
      return [];
    },
    describe: (a) => msg('bluetooth.scan', { seconds: Math.ceil((a.duration_ms ?? 5000) / 1000) }),
    async run(a, ctx) {
      if (!ge.grants().length) fail('permission_denied', 'Bluetooth is not shared with this agent; add an entry under grants.bluetooth.', { details: { reason: 'not_granted' } });
      return mapped(async () =>
        ops.scan(
          (await rt(ge)).session,
          { duration_ms: a.duration_ms ?? 5000, max_results: a.max_results ?? 50, ...(a.services ? { services: a.services } : {}), ...(a.name_prefix !== undefined ? { name_prefix: a.name_prefix } : {}), ...(a.min_rssi !== undefined ? { min_rssi: a.min_rssi } : {}) },
          ctx.signal,
          (p) => ctx.progress(p),
          (id, address) => aliasOf(ge.grants(), id, address),
        ),
      );
    },
  });
}

// ---- bluetooth.services ----------------------------------------------------------------------------

const ServicesIn = closed({ device: Device });
const ServicesOut = closed({
  device: DeviceOut,
  services: Type.Array(
    closed({
      uuid: Type.String(),
      name: Type.Optional(Type.String()),
      characteristics: Type.Array(closed({ uuid: Type.String(), name: Type.Optional(Type.String()), properties: Type.Array(Type.String()) })),
    }),
  ),
});

function servicesFn(ge: BleGlueEnv) {
  return defineFunction<Static<typeof ServicesIn>, Static<typeof ServicesOut>>({
    descriptor: descriptor({
      id: 'bluetooth.services',
      name: 'List a Bluetooth device\'s services',
      description: 'Connects to a shared Bluetooth device and lists its services and characteristics with their properties (read, write, writeWithoutResponse, notify, indicate). Only the services the grant shares are listed.',
      permission_level: 'medium',
      risk: READ_RISK,
      confirmation: 'policy',
      examples: ['What can the fridge thermometer tell us?'],
      input_schema: ServicesIn,
      output_schema: ServicesOut,
      timeout_ms_default: 30_000,
      timeout_ms_max: 60_000,
    }),
    resources: (a) => target(ge, a.device),
    describe: (a, r) => msg('bluetooth.services', { device: shown(r, a.device) }),
    async run(a, ctx) {
      const { grant } = resolveTarget(ge, a.device);
      return mapped(async () => {
        const { pool } = await rt(ge);
        const list = await ops.withConnection(pool, grant.id, ctx.signal, (c) => ops.services(c, ctx.signal, (u) => coversService(grant, u)));
        return { device: deviceOut(grant), services: list };
      });
    },
  });
}

// ---- bluetooth.read --------------------------------------------------------------------------------

const ReadIn = closed(Target);
const ReadOut = closed({
  device: DeviceOut,
  service: Type.String(),
  characteristic: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  hex: Type.String(),
  base64: Type.String(),
  text: Type.Optional(Type.String({ description: 'the value as UTF-8 text, when it is printable text' })),
});

function asText(b: Buffer): string | undefined {
  const t = new TextDecoder('utf-8', { fatal: false }).decode(b);
  // eslint-disable-next-line no-control-regex
  return b.length && !t.includes('\uFFFD') && !/[\u0000-\u0008\u000E-\u001F\u007F]/.test(t) ? t : undefined;
}

function readFn(ge: BleGlueEnv) {
  return defineFunction<Static<typeof ReadIn>, Static<typeof ReadOut>>({
    descriptor: descriptor({
      id: 'bluetooth.read',
      name: 'Read a Bluetooth characteristic',
      description: 'Reads one characteristic of a shared Bluetooth device (connecting if needed; the connection stays open a few seconds for the next call). The value comes as hex and base64, and as text when it is printable.',
      permission_level: 'medium',
      risk: READ_RISK,
      confirmation: 'policy',
      examples: ['Read the temperature from the fridge thermometer'],
      input_schema: ReadIn,
      output_schema: ReadOut,
      timeout_ms_default: 20_000,
      timeout_ms_max: 60_000,
    }),
    resources: (a) => target(ge, a.device, a.service),
    describe: (a, r) => msg('bluetooth.read', { device: shown(r, a.device), characteristic: charLabel(a.characteristic) }),
    async run(a, ctx) {
      const { grant, service } = resolveTarget(ge, a.device, a.service);
      const ch = normUuid(a.characteristic) ?? a.characteristic;
      return mapped(async () => {
        const data = await ops.withConnection((await rt(ge)).pool, grant.id, ctx.signal, (c) => ops.read(c, service!, ch, ctx.signal));
        const text = asText(data);
        return { device: deviceOut(grant), service: service!, characteristic: ch, size: data.length, hex: data.toString('hex'), base64: data.toString('base64'), ...(text !== undefined ? { text } : {}) };
      });
    },
  });
}

// ---- bluetooth.write -------------------------------------------------------------------------------

const MAX_WRITE = 512;
const WriteIn = Type.Object(
  {
    ...Target,
    hex: Type.Optional(Type.String({ pattern: '^([0-9a-fA-F]{2})*$', maxLength: MAX_WRITE * 2 })),
    base64: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9+/]*={0,2}$', maxLength: Math.ceil(MAX_WRITE / 3) * 4 })),
    text: Type.Optional(Type.String({ maxLength: MAX_WRITE, description: 'sent as UTF-8' })),
    without_response: Type.Optional(Type.Boolean({ default: false, description: 'write without response (the device does not confirm)' })),
  },
  {
    additionalProperties: false,
    oneOf: [{ required: ['hex'] }, { required: ['base64'] }, { required: ['text'] }],
    description: 'Give the value as exactly one of hex, base64 or text (at most 512 bytes).',
  },
);
const WriteOut = closed({ device: DeviceOut, service: Type.String(), characteristic: Type.String(), size: Type.Integer({ minimum: 0 }), with_response: Type.Boolean() });

function valueOf(a: Static<typeof WriteIn>): Buffer {
  const b = a.hex !== undefined ? Buffer.from(a.hex, 'hex') : a.base64 !== undefined ? Buffer.from(a.base64, 'base64') : Buffer.from(a.text ?? '', 'utf8');
  if (b.length > MAX_WRITE) fail('invalid_arguments', `A Bluetooth write holds at most ${MAX_WRITE} bytes; this one has ${b.length}.`, { details: { violations: [{ pointer: '', message: `more than ${MAX_WRITE} bytes` }] } });
  return b;
}

function writeFn(ge: BleGlueEnv) {
  return defineFunction<Static<typeof WriteIn>, Static<typeof WriteOut>>({
    descriptor: descriptor({
      id: 'bluetooth.write',
      name: 'Write a Bluetooth characteristic',
      description: 'Writes a value (hex, base64 or text, at most 512 bytes) to one characteristic of a shared Bluetooth device, with response (the device confirms) or without. This can change what the device does (a label printer prints, a lamp switches).',
      permission_level: 'high',
      risk: { read_only: false, destructive: false, idempotent: false, physical: true },
      confirmation: 'policy',
      examples: ['Set the thermometer\'s alarm to 8 °C', 'Switch the BLE lamp on'],
      input_schema: WriteIn,
      output_schema: WriteOut,
      timeout_ms_default: 20_000,
      timeout_ms_max: 60_000,
    }),
    resources(a) {
      valueOf(a); // over 512 bytes: invalid_arguments before anyone is asked
      return target(ge, a.device, a.service);
    },
    describe: (a, r) => msg('bluetooth.write', { device: shown(r, a.device), characteristic: charLabel(a.characteristic), bytes: valueOf(a).length }),
    async run(a, ctx) {
      const { grant, service } = resolveTarget(ge, a.device, a.service);
      const ch = normUuid(a.characteristic) ?? a.characteristic;
      const data = valueOf(a);
      const withoutResponse = a.without_response ?? false;
      return mapped(async () => {
        await ops.withConnection((await rt(ge)).pool, grant.id, ctx.signal, (c) => ops.write(c, service!, ch, data, withoutResponse, ctx.signal));
        return { device: deviceOut(grant), service: service!, characteristic: ch, size: data.length, with_response: !withoutResponse };
      }, 'possible');
    },
  });
}

// ---- bluetooth.subscribe ---------------------------------------------------------------------------

const SubscribeIn = closed({
  ...Target,
  duration_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 300_000, default: 10_000, description: 'Listen at most this long (at most 5 minutes; raise timeout_ms above it).' })),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'Stop after this many notifications.' })),
  max_values: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 1000, description: 'Keep at most this many values in the result (the first ones); received counts them all.' })),
});
const SubscribeOut = closed({
  device: DeviceOut,
  service: Type.String(),
  characteristic: Type.String(),
  values: Type.Array(closed({ at_ms: Type.Integer({ minimum: 0 }), hex: Type.String() })),
  received: Type.Integer({ minimum: 0 }),
  truncated: Type.Boolean(),
  ended: Type.Union([Type.Literal('count'), Type.Literal('duration')]),
});

function subscribeFn(ge: BleGlueEnv) {
  return defineFunction<Static<typeof SubscribeIn>, Static<typeof SubscribeOut>>({
    descriptor: descriptor({
      id: 'bluetooth.subscribe',
      name: 'Receive Bluetooth notifications',
      description: 'Receives notifications from one characteristic of a shared Bluetooth device for a bounded time or count. Progress (at most 10 a second) carries the latest value (hex) and the count; the result holds every value with its time (at most max_values). Cancelling stops it at once and unsubscribes.',
      permission_level: 'medium',
      risk: READ_RISK,
      confirmation: 'policy',
      examples: ['Record the heart-rate strap for 30 seconds'],
      input_schema: SubscribeIn,
      output_schema: SubscribeOut,
      timeout_ms_default: 60_000,
      timeout_ms_max: 330_000,
    }),
    resources: (a) => target(ge, a.device, a.service),
    describe: (a, r) => msg('bluetooth.subscribe', { device: shown(r, a.device), characteristic: charLabel(a.characteristic), seconds: Math.ceil((a.duration_ms ?? 10_000) / 1000) }),
    async run(a, ctx) {
      const { grant, service } = resolveTarget(ge, a.device, a.service);
      const ch = normUuid(a.characteristic) ?? a.characteristic;
      return mapped(async () => {
        const r = await ops.withConnection((await rt(ge)).pool, grant.id, ctx.signal, (c) =>
          ops.subscribe(c, service!, ch, { duration_ms: a.duration_ms ?? 10_000, max_values: a.max_values ?? 1000, ...(a.count ? { count: a.count } : {}) }, ctx.signal, (p) => ctx.progress(p)),
        );
        return { device: deviceOut(grant), service: service!, characteristic: ch, ...r };
      });
    },
  });
}

// ---- bluetooth.disconnect --------------------------------------------------------------------------

const DisconnectIn = closed({ device: Device });
const DisconnectOut = closed({ device: DeviceOut, was_connected: Type.Boolean() });

function disconnectFn(ge: BleGlueEnv) {
  return defineFunction<Static<typeof DisconnectIn>, Static<typeof DisconnectOut>>({
    descriptor: descriptor({
      id: 'bluetooth.disconnect',
      name: 'Disconnect a Bluetooth device',
      description: 'Closes this agent\'s connection to a shared Bluetooth device now instead of after a few idle seconds (so another program or phone can connect to it).',
      permission_level: 'low',
      risk: { read_only: false, destructive: false, idempotent: true, physical: false },
      confirmation: 'policy',
      examples: ['Let go of the heart-rate strap'],
      input_schema: DisconnectIn,
      output_schema: DisconnectOut,
      timeout_ms_default: 10_000,
      timeout_ms_max: 30_000,
    }),
    resources: (a) => target(ge, a.device),
    describe: (a, r) => msg('bluetooth.disconnect', { device: shown(r, a.device) }),
    async run(a, ctx) {
      const { grant } = resolveTarget(ge, a.device);
      return mapped(async () => ({ device: deviceOut(grant), was_connected: await (await rt(ge)).pool.closeAndWait(grant.id, ctx.signal) }));
    },
  });
}

/** Every function of the handler, in id order. */
export function bluetoothFunctions(ge: BleGlueEnv): AnyFunctionDefinition[] {
  return [disconnectFn(ge), readFn(ge), scanFn(ge), servicesFn(ge), stateFn(ge), subscribeFn(ge), writeFn(ge)];
}
