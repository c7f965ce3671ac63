/**
 * The serial functions: descriptors and the glue from the SDK to the engine (engine/operations.ts).
 * Each resolves its `port` against the grants, locks `serial:<path>`, describes itself from the
 * catalogue and maps engine faults to wire errors.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { defineFunction, fail, type CallContext, type DescriptorInput, type FunctionDefinition } from '../../src/sdk/index.js';
import type { Binding } from './engine/binding.js';
import { SerialFault } from './engine/faults.js';
import * as ops from './engine/operations.js';
import { payloadBytes } from './engine/payload.js';
import type { PortPool } from './engine/pool.js';
import { bytesParam, renderEn, type Sentence } from './describe.js';
import { findSerialGrant, type SerialGrant } from './grant-kind.js';
import * as S from './schemas.js';

/** What the functions share: the pool, the binding and the live grants. */
export interface SerialEnv {
  pool: PortPool;
  binding: () => Promise<Binding>;
  grants: () => readonly SerialGrant[];
}

/** A TypeBox schema as the plain JSON Schema a descriptor carries. */
const plain = (s: TSchema): Record<string, unknown> => JSON.parse(JSON.stringify(s)) as Record<string, unknown>;

type Risk = DescriptorInput['risk'];
const READS: Risk = { read_only: true, destructive: false, idempotent: true, physical: false };
const TALKS: Risk = { read_only: false, destructive: false, idempotent: false, physical: true };
const ACTS: Risk = { read_only: false, destructive: true, idempotent: false, physical: true };

function descriptor(d: Pick<DescriptorInput, 'id' | 'name' | 'description' | 'permission_level' | 'risk' | 'examples'> & { input: TSchema; output: TSchema } & Partial<DescriptorInput>): DescriptorInput {
  const { input, output, ...rest } = d;
  return {
    version: '1.0.0',
    capability_type: 'device',
    access: 'restricted',
    confirmation: 'policy',
    timeout_ms_default: 30_000,
    timeout_ms_max: 120_000,
    cancellable: true,
    locks: [],
    input_schema: plain(input),
    output_schema: plain(output),
    ...rest,
  };
}

/** The grant a call names, or permission_denied (before any port is touched). */
function target(env: SerialEnv, port: string): ops.Target {
  const g = findSerialGrant(env.grants(), port);
  if (!g) fail('permission_denied', `Serial port ${port} is not shared with this agent; add it under grants.serial.`);
  return { path: g.id, alias: g.alias, settings: g.settings };
}

/** The label prompts show: the alias if there is one, else the path. */
function label(env: SerialEnv, port: string): string {
  const g = findSerialGrant(env.grants(), port);
  return g?.alias ?? g?.id ?? port;
}

/** The lock of a call: one call per port at a time. */
function lockOf(env: SerialEnv, port: string): string[] {
  const g = findSerialGrant(env.grants(), port);
  return [`serial:${g?.id ?? port}`];
}

/** Engine faults -> wire errors, in one place. Anything else goes up unchanged (cancellation, defects). */
async function mapped<T>(ctx: CallContext, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof SerialFault) {
      // Sizes and reasons only: never bytes read or written.
      ctx.log.debug({ reason: e.reason, type: e.type }, 'serial call failed');
      fail(e.type, e.message, { details: { reason: e.reason }, retryable: e.retryable });
    }
    throw e;
  }
}

/** Common parts of every port function's definition. */
function portFunction<I extends { port: string }, O>(env: SerialEnv, d: DescriptorInput, sentence: (a: I) => Sentence, run: (t: ops.Target, a: I, ctx: CallContext) => Promise<O>): FunctionDefinition<I, O> {
  return defineFunction<I, O>({
    descriptor: d,
    locks: (a) => lockOf(env, a.port),
    resource: (a) => `serial:${findSerialGrant(env.grants(), a.port)?.id ?? a.port}`,
    describe: (a) => renderEn(sentence(a)),
    run: (a, ctx) => mapped(ctx, async () => run(target(env, a.port), a, ctx)),
  });
}

const safeBytes = (f: () => Buffer): string => {
  try {
    return bytesParam(f().length);
  } catch {
    return '?';
  }
};

/** Every function of the handler. */
export function serialFunctions(env: SerialEnv): FunctionDefinition<never, unknown>[] {
  const listPorts = defineFunction<Static<typeof S.ListInput>, Static<typeof S.ListOutput>>({
    descriptor: descriptor({
      id: 'serial.list_ports',
      name: 'List serial ports',
      description:
        'Lists serial ports: the ones shared with this agent first (with their alias, manufacturer, serial number, USB vendor and product id, and whether the OS sees them now), then other ports by path only. Ports are never opened. Use to find the port name for the other serial functions.',
      permission_level: 'low',
      risk: READS,
      examples: ['Which serial devices are connected?'],
      input: S.ListInput,
      output: S.ListOutput,
      timeout_ms_default: 10_000,
      timeout_ms_max: 30_000,
    }),
    describe: () => renderEn({ key: 'serial.list_ports', params: {} }),
    run: (_a, ctx) => mapped(ctx, async () => ({ ports: await ops.list(env.binding, env.grants().map((g) => ({ path: g.id, alias: g.alias }))) })),
  });

  const request = portFunction<Static<typeof S.RequestInput>, ops.RequestResult>(
    env,
    descriptor({
      id: 'serial.request',
      name: 'Ask a serial device',
      description:
        'Opens a shared serial port (or reuses it), optionally sends bytes (text, hex or base64), then reads the answer until a delimiter, a byte count, an idle gap, a regular expression on the text or a time limit, whichever comes first. Answers the bytes (text and/or base64), how the read ended and timings. Use for request/response instruments: "W\\r\\n" to a scale, a query to a meter.',
      permission_level: 'medium',
      risk: TALKS,
      examples: ['Read the weight from the scale', 'Ask the meter for its reading'],
      input: S.RequestInput,
      output: S.RequestOutput,
    }),
    (a) => {
      const port = label(env, a.port);
      return a.write ? { key: 'serial.request', params: { port, bytes: safeBytes(() => payloadBytes({ ...a.write, encoding: a.write!.encoding ?? a.encoding ?? 'utf8' })) } } : { key: 'serial.request.read', params: { port } };
    },
    (t, a, ctx) => ops.request(env.pool, t, a, ctx.signal),
  );

  const write = portFunction<Static<typeof S.WriteInput>, ops.WriteResult>(
    env,
    descriptor({
      id: 'serial.write',
      name: 'Send to a serial device',
      description: 'Sends bytes (text, hex or base64) to a shared serial port without reading an answer. Use for devices that only listen: a label printer, a display, a relay board.',
      permission_level: 'high',
      risk: ACTS,
      examples: ['Print this label on the serial label printer'],
      input: S.WriteInput,
      output: S.WriteOutput,
    }),
    (a) => ({ key: 'serial.write', params: { port: label(env, a.port), bytes: safeBytes(() => payloadBytes(a.data, 'data')) } }),
    async (t, a, ctx) => {
      const r = await ops.write(env.pool, t, a, ctx.signal);
      ctx.commit();
      return r;
    },
  );

  const setSignals = portFunction<Static<typeof S.SetSignalsInput>, Awaited<ReturnType<typeof ops.setSignals>>>(
    env,
    descriptor({
      id: 'serial.set_signals',
      name: 'Set serial control lines',
      description: 'Sets the DTR and RTS control lines of a shared serial port, holds or releases a break, or sends a timed break. Many devices reset or change mode on these lines.',
      permission_level: 'high',
      risk: ACTS,
      examples: ['Reset the controller by pulsing DTR'],
      input: S.SetSignalsInput,
      output: S.SetSignalsOutput,
    }),
    (a) => {
      const changes = [
        a.dtr !== undefined ? `DTR ${a.dtr ? 'on' : 'off'}` : '',
        a.rts !== undefined ? `RTS ${a.rts ? 'on' : 'off'}` : '',
        a.brk !== undefined ? `BRK ${a.brk ? 'on' : 'off'}` : '',
        a.break_ms !== undefined ? renderEn({ key: 'serial.break', params: { ms: a.break_ms } }) : '',
      ].filter(Boolean);
      return { key: 'serial.set_signals', params: { port: label(env, a.port), changes: changes.join(', ') } };
    },
    (t, a, ctx) => ops.setSignals(env.pool, t, a, ctx.signal),
  );

  const getSignals = portFunction<Static<typeof S.GetSignalsInput>, Awaited<ReturnType<typeof ops.getSignals>>>(
    env,
    descriptor({
      id: 'serial.get_signals',
      name: 'Read serial control lines',
      description: 'Reads the CTS, DSR and DCD lines of a shared serial port, and the DTR, RTS and break this agent last set.',
      permission_level: 'low',
      risk: READS,
      examples: ['Is the modem on the serial port ready (DSR)?'],
      input: S.GetSignalsInput,
      output: S.GetSignalsOutput,
    }),
    (a) => ({ key: 'serial.get_signals', params: { port: label(env, a.port) } }),
    (t, a, ctx) => ops.getSignals(env.pool, t, a, ctx.signal),
  );

  const monitor = portFunction<Static<typeof S.MonitorInput>, ops.MonitorResult>(
    env,
    descriptor({
      id: 'serial.monitor',
      name: 'Watch a serial port',
      description:
        'Records what a shared serial port sends for a set time (at most 10 minutes). Progress (at most 10 a second) carries the latest line and the counts so far; the answer holds the record, as lines with times by default (at most 1 MiB kept; the rest counted in overflow_bytes). Use for barcode readers and instruments that send on their own.',
      permission_level: 'medium',
      risk: { read_only: true, destructive: false, idempotent: false, physical: false },
      examples: ['Collect the barcodes scanned in the next minute'],
      input: S.MonitorInput,
      output: S.MonitorOutput,
      timeout_ms_default: 60_000,
      timeout_ms_max: ops.MAX_MONITOR_MS + 30_000,
    }),
    (a) => ({ key: 'serial.monitor', params: { port: label(env, a.port), seconds: Math.round(a.duration_ms / 100) / 10 } }),
    (t, a, ctx) =>
      ops.monitor(env.pool, t, a, ctx.signal, (p) =>
        ctx.progress({ progress: Math.round(p.elapsedMs), total: a.duration_ms, message: `${p.lineCount} lines, ${p.bytes} bytes${p.lastLine !== undefined ? `; last: ${p.lastLine.slice(0, 200)}` : ''}` }),
      ),
  );

  return [listPorts, request, write, setSignals, getSignals, monitor] as unknown as FunctionDefinition<never, unknown>[];
}
