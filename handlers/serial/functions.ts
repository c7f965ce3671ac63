/**
 * The serial functions: descriptors and the glue from the SDK to the engine (engine/operations.ts).
 * Each resolves its `port` against the grants before consent (resources(); the kit locks
 * `serial:<path>`), describes itself with a catalogue message and maps engine faults to wire errors.
 */
import { defineFunction, fail, mapErrors, WireError, type AnyFunctionDefinition, type CallResource, type DescriptorInput, type GrantsView, type Message } from '../../src/sdk/index.js';
import type { Binding } from './engine/binding.js';
import { SerialFault } from './engine/faults.js';
import * as ops from './engine/operations.js';
import { payloadBytes } from './engine/payload.js';
import type { PortPool } from './engine/pool.js';
import { grantSettings } from './grant-kind.js';
import * as S from './schemas.js';

/** What the functions share: the pool, the binding and the live grants. */
export interface SerialEnv {
  pool: PortPool;
  binding: () => Promise<Binding>;
  grants: GrantsView;
}

type Risk = DescriptorInput['risk'];
const READS: Risk = { read_only: true, destructive: false, idempotent: true, physical: false };
const TALKS: Risk = { read_only: false, destructive: false, idempotent: false, physical: true };
const ACTS: Risk = { read_only: false, destructive: true, idempotent: false, physical: true };

/** Descriptor defaults of the handler. */
const base: Pick<DescriptorInput, 'version' | 'capability_type' | 'access' | 'confirmation' | 'timeout_ms_default' | 'timeout_ms_max' | 'cancellable' | 'locks'> = {
  version: '1.0.0',
  capability_type: 'device',
  access: 'restricted',
  confirmation: 'policy',
  timeout_ms_default: 30_000,
  timeout_ms_max: 120_000,
  cancellable: true,
  locks: [],
};

/** The port a call names, as a resource (before consent): permission_denied when it is not granted. */
function portResource(grants: GrantsView, port: string): CallResource[] {
  const g = grants.find('serial', port);
  if (!g) fail('permission_denied', `Serial port ${port} is not shared with this agent; add it under grants.serial.`);
  return [{ kind: 'serial', id: g.id, label: g.alias ?? g.id, ask: g.ask }];
}

/** The port a running call uses, with the grant's settings (the grant may have changed since resources()). */
function target(env: SerialEnv, port: string): ops.Target {
  const g = env.grants.find('serial', port);
  if (!g) fail('permission_denied', `Serial port ${port} is no longer shared with this agent.`);
  return { path: g.id, alias: g.alias, settings: grantSettings(g) };
}

/** The label prompts show for the call's port. */
const label = (r: readonly CallResource[], port: string): string => r[0]?.label ?? r[0]?.id ?? port;

/** A byte count as a catalogue message ("12 bytes"); '?' for a payload the call will refuse anyway. */
function bytesOf(f: () => Buffer): Message | string {
  try {
    return { key: 'serial.bytes', params: { n: f().length } };
  } catch {
    return '?';
  }
}

/** Engine faults -> wire errors, in one place. Anything else goes up unchanged (cancellation, wire errors). */
function toWire(e: unknown): unknown {
  if (!(e instanceof SerialFault)) return e;
  return new WireError(e.type, e.message, { details: { reason: e.reason }, retryable: e.retryable, sideEffects: 'none' });
}

/** Checks arguments before consent, so a call that cannot succeed is refused without a prompt. */
function precheck(f: () => unknown): void {
  try {
    f();
  } catch (e) {
    if (e instanceof SerialFault) fail('invalid_arguments', e.message, { details: { reason: e.reason } });
    throw e;
  }
}

/** Every function of the handler. */
export function serialFunctions(env: SerialEnv): AnyFunctionDefinition[] {
  const listPorts = defineFunction({
    descriptor: {
      ...base,
      id: 'serial.list_ports',
      name: 'List serial ports',
      description:
        'Lists serial ports: the ones shared with this agent first (with their alias, manufacturer, serial number, USB vendor and product id, and whether the OS sees them now), then other ports by path only. Ports are never opened. Use to find the port name for the other serial functions.',
      permission_level: 'low',
      risk: READS,
      examples: ['Which serial devices are connected?'],
      input_schema: S.ListInput,
      output_schema: S.ListOutput,
      timeout_ms_default: 10_000,
      timeout_ms_max: 30_000,
    },
    describe: () => ({ key: 'serial.list_ports' }),
    run: async () => ({ ports: await ops.list(env.binding, env.grants.list('serial').map((g) => ({ path: g.id, alias: g.alias }))) }),
  });

  const request = defineFunction({
    descriptor: {
      ...base,
      id: 'serial.request',
      name: 'Ask a serial device',
      description:
        'Opens a shared serial port (or reuses it), optionally sends bytes (text, hex or base64), then reads the answer until a delimiter, a byte count, an idle gap, a regular expression on the text or a time limit, whichever comes first. Answers the bytes (text and/or base64), how the read ended and timings. Use for request/response instruments: "W\\r\\n" to a scale, a query to a meter.',
      permission_level: 'medium',
      risk: TALKS,
      examples: ['Read the weight from the scale', 'Ask the meter for its reading'],
      input_schema: S.RequestInput,
      output_schema: S.RequestOutput,
    },
    resources: (a, { grants }) => {
      precheck(() => ops.checkRequest(a));
      return portResource(grants, a.port);
    },
    describe: (a, r): Message =>
      a.write
        ? { key: 'serial.request', params: { port: label(r, a.port), bytes: bytesOf(() => payloadBytes({ ...a.write, encoding: a.write!.encoding ?? a.encoding ?? 'utf8' })) } }
        : { key: 'serial.request.read', params: { port: label(r, a.port) } },
    run: (a, ctx) => ops.request(env.pool, target(env, a.port), a, ctx.signal),
  });

  const write = defineFunction({
    descriptor: {
      ...base,
      id: 'serial.write',
      name: 'Send to a serial device',
      description: 'Sends bytes (text, hex or base64) to a shared serial port without reading an answer. Use for devices that only listen: a label printer, a display, a relay board.',
      permission_level: 'high',
      risk: ACTS,
      examples: ['Print this label on the serial label printer'],
      input_schema: S.WriteInput,
      output_schema: S.WriteOutput,
    },
    resources: (a, { grants }) => {
      precheck(() => payloadBytes(a.data, 'data'));
      return portResource(grants, a.port);
    },
    describe: (a, r) => ({ key: 'serial.write', params: { port: label(r, a.port), bytes: bytesOf(() => payloadBytes(a.data, 'data')) } }),
    async run(a, ctx) {
      const out = await ops.write(env.pool, target(env, a.port), a, ctx.signal);
      ctx.commit();
      return out;
    },
  });

  const setSignals = defineFunction({
    descriptor: {
      ...base,
      id: 'serial.set_signals',
      name: 'Set serial control lines',
      description: 'Sets the DTR and RTS control lines of a shared serial port, holds or releases a break, or sends a timed break. Many devices reset or change mode on these lines.',
      permission_level: 'high',
      risk: ACTS,
      examples: ['Reset the controller by pulsing DTR'],
      input_schema: S.SetSignalsInput,
      output_schema: S.SetSignalsOutput,
    },
    resources: (a, { grants }) => {
      if (a.dtr === undefined && a.rts === undefined && a.brk === undefined && a.break_ms === undefined) fail('invalid_arguments', 'Give at least one of dtr, rts, brk or break_ms.');
      if (a.brk !== undefined && a.break_ms !== undefined) fail('invalid_arguments', 'Give brk or break_ms, not both.');
      return portResource(grants, a.port);
    },
    describe: (a, r): Message => {
      const on = (v: boolean): Message => ({ key: v ? 'serial.line.on' : 'serial.line.off' });
      const changes: Message[] = [];
      if (a.dtr !== undefined) changes.push({ key: 'serial.line', params: { line: 'DTR', state: on(a.dtr) } });
      if (a.rts !== undefined) changes.push({ key: 'serial.line', params: { line: 'RTS', state: on(a.rts) } });
      if (a.brk !== undefined) changes.push({ key: 'serial.line', params: { line: 'BRK', state: on(a.brk) } });
      if (a.break_ms !== undefined) changes.push({ key: 'serial.break', params: { ms: a.break_ms } });
      // Up to three changes; each is a message of its own so that it is translated too.
      const [c1, c2, c3] = changes;
      const key = changes.length >= 3 ? 'serial.set_signals.3' : changes.length === 2 ? 'serial.set_signals.2' : 'serial.set_signals';
      return { key, params: { port: label(r, a.port), ...(c1 ? { c1 } : {}), ...(c2 ? { c2 } : {}), ...(c3 ? { c3 } : {}) } };
    },
    run: (a, ctx) => ops.setSignals(env.pool, target(env, a.port), a, ctx.signal),
  });

  const getSignals = defineFunction({
    descriptor: {
      ...base,
      id: 'serial.get_signals',
      name: 'Read serial control lines',
      description: 'Reads the CTS, DSR and DCD lines of a shared serial port, and the DTR, RTS and break this agent last set.',
      permission_level: 'low',
      risk: READS,
      examples: ['Is the modem on the serial port ready (DSR)?'],
      input_schema: S.GetSignalsInput,
      output_schema: S.GetSignalsOutput,
    },
    resources: (a, { grants }) => portResource(grants, a.port),
    describe: (a, r) => ({ key: 'serial.get_signals', params: { port: label(r, a.port) } }),
    run: (a, ctx) => ops.getSignals(env.pool, target(env, a.port), a, ctx.signal),
  });

  const monitor = defineFunction({
    descriptor: {
      ...base,
      id: 'serial.monitor',
      name: 'Watch a serial port',
      description:
        'Records what a shared serial port sends for a set time (at most 10 minutes). Progress (at most 10 a second) carries the latest line and the counts so far; the answer holds the record, as lines with times by default (at most 1 MiB kept; the rest counted in overflow_bytes). Use for barcode readers and instruments that send on their own.',
      permission_level: 'medium',
      risk: { read_only: true, destructive: false, idempotent: false, physical: false },
      examples: ['Collect the barcodes scanned in the next minute'],
      input_schema: S.MonitorInput,
      output_schema: S.MonitorOutput,
      timeout_ms_default: 60_000,
      timeout_ms_max: ops.MAX_MONITOR_MS + 30_000,
    },
    resources: (a, { grants }) => portResource(grants, a.port),
    describe: (a, r) => ({ key: 'serial.monitor', params: { port: label(r, a.port), seconds: Math.round(a.duration_ms / 100) / 10 } }),
    run: (a, ctx) =>
      ops.monitor(env.pool, target(env, a.port), a, ctx.signal, (p) =>
        ctx.progress({ progress: Math.round(p.elapsedMs), total: a.duration_ms, message: `${p.lineCount} lines, ${p.bytes} bytes${p.lastLine !== undefined ? `; last: ${p.lastLine.slice(0, 200)}` : ''}` }),
      ),
  });

  const defs: AnyFunctionDefinition[] = [listPorts, request, write, setSignals, getSignals, monitor];
  return defs.map((d) => mapErrors(d, toWire));
}
