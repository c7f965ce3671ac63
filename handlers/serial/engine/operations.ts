/**
 * The serial functions' work, without the SDK: each takes the pool, the resolved port and the validated
 * arguments, and returns the plain answer. Arguments are checked before the port is touched.
 */
import type { Binding, PortInfo } from './binding.js';
import { SerialFault } from './faults.js';
import { listPorts, type ListedPort, type PortGrant } from './listing.js';
import { checkRegex, type EndReason, type TextEncoding } from './matcher.js';
import { monitorLink, type Line, type MonitorProgress } from './monitor.js';
import { answer, MAX_IO_BYTES, payloadBytes, type AnswerFormat, type Payload } from './payload.js';
import type { Lease, PortPool } from './pool.js';
import { readUntil } from './reader.js';
import { resolveSettings, type PortSettings } from './settings.js';
import { applySignals, readSignals, type SignalChange } from './signals.js';

/** A port a call may use: its path, its alias and the grant's settings. */
export interface Target {
  path: string;
  alias?: string | undefined;
  settings?: PortSettings | undefined;
}

/** Default time limit of a read (ms). */
export const DEFAULT_READ_MS = 5000;
/** Default idle gap when a call gives no end condition at all (ms). */
export const DEFAULT_IDLE_MS = 200;
/** Default size cap of a read (bytes). */
export const DEFAULT_MAX_BYTES = 64 * 1024;
/** Longest watch (ms). */
export const MAX_MONITOR_MS = 10 * 60 * 1000;

/** End conditions of serial.request. */
export interface Until {
  delimiter?: string;
  delimiter_hex?: string;
  include_delimiter?: boolean;
  bytes?: number;
  idle_ms?: number;
  regex?: string;
  regex_flags?: string;
  max_ms?: number;
}

/** serial.request's arguments (the port already resolved). */
export interface RequestArgs {
  write?: Payload;
  until?: Until;
  encoding?: TextEncoding;
  format?: AnswerFormat;
  max_bytes?: number;
  flush_input?: boolean;
  settings?: PortSettings;
}

/** Timings of a call (ms). */
export interface Timings {
  open_ms: number;
  write_ms: number;
  first_byte_ms: number | null;
  read_ms: number;
  total_ms: number;
}

/** serial.request's answer. */
export interface RequestResult {
  port: string;
  path: string;
  written: number;
  bytes: number;
  text?: string;
  base64?: string;
  ended: EndReason;
  match?: string;
  reused_port: boolean;
  timings: Timings;
}

const ms = (n: number) => Math.round(n * 100) / 100;

/** The byte form of the delimiter, checked. */
function delimiterOf(u: Until, encoding: TextEncoding): Buffer | undefined {
  if (u.delimiter !== undefined && u.delimiter_hex !== undefined) throw new SerialFault('invalid_arguments', 'bad_settings', 'Give delimiter or delimiter_hex, not both.');
  if (u.delimiter_hex !== undefined) return payloadBytes({ hex: u.delimiter_hex }, 'until.delimiter_hex');
  if (u.delimiter !== undefined) return Buffer.from(u.delimiter, encoding);
  return undefined;
}

/** Checks a request's arguments before any port is touched (for describe() and run()). */
export function checkRequest(a: RequestArgs): { payload: Buffer | undefined; delimiter: Buffer | undefined } {
  const enc = a.encoding ?? 'utf8';
  const u = a.until ?? {};
  const payload = a.write ? payloadBytes({ ...a.write, encoding: a.write.encoding ?? enc }) : undefined;
  const delimiter = delimiterOf(u, enc);
  if (delimiter && !delimiter.length) throw new SerialFault('invalid_arguments', 'bad_settings', 'The delimiter is empty.');
  if (u.regex !== undefined) checkRegex(u.regex, u.regex_flags ?? '');
  const max = a.max_bytes ?? DEFAULT_MAX_BYTES;
  if (u.bytes !== undefined && u.bytes > max) throw new SerialFault('invalid_arguments', 'bad_settings', 'until.bytes is larger than max_bytes.');
  return { payload, delimiter };
}

/**
 * Acquires the port and runs `use`; when a port reused from the pool turns out dead at the first
 * operation (the device was replugged since), it is reopened once: nothing reached the device then.
 */
async function withPort<T>(pool: PortPool, t: Target, settings: PortSettings | undefined, signal: AbortSignal, use: (l: Lease) => Promise<T>): Promise<T> {
  const resolved = resolveSettings(t.settings, settings);
  for (let attempt = 0; ; attempt++) {
    const lease = await pool.acquire(t.path, resolved, signal);
    try {
      return await use(lease);
    } catch (e) {
      const stale = !lease.opened && attempt === 0 && e instanceof SerialFault && e.type === 'device_unavailable' && lease.link.failure === e;
      if (!stale || !(e as SerialFault & { early?: boolean }).early) throw e;
    } finally {
      lease.release();
    }
  }
}

/** Marks a fault as raised before any byte reached the device (so a retry on a fresh port is safe). */
function early<T>(p: Promise<T>): Promise<T> {
  return p.catch((e: unknown) => {
    if (e instanceof SerialFault) Object.assign(e, { early: true });
    throw e;
  });
}

/** serial.request: optionally write, then read until an end condition. */
export async function request(pool: PortPool, t: Target, a: RequestArgs, signal: AbortSignal): Promise<RequestResult> {
  const t0 = performance.now();
  const { payload, delimiter } = checkRequest(a);
  const enc = a.encoding ?? 'utf8';
  const u = a.until ?? {};
  const none = u.delimiter === undefined && u.delimiter_hex === undefined && u.bytes === undefined && u.idle_ms === undefined && u.regex === undefined;
  return withPort(pool, t, a.settings, signal, async (lease) => {
    const link = lease.link;
    const tw = performance.now();
    if (a.flush_input !== false) link.discardInput();
    if (payload?.length) await early(link.write(payload, signal));
    const write_ms = performance.now() - tw;
    const r = await readUntil(
      link,
      {
        ...(delimiter ? { delimiter, includeDelimiter: u.include_delimiter !== false } : {}),
        ...(u.bytes !== undefined ? { bytes: u.bytes } : {}),
        ...(u.regex !== undefined ? { regex: { source: u.regex, flags: u.regex_flags ?? '' } } : {}),
        ...(u.idle_ms !== undefined || none ? { idleMs: u.idle_ms ?? DEFAULT_IDLE_MS } : {}),
        maxMs: u.max_ms ?? DEFAULT_READ_MS,
        maxBytes: Math.min(a.max_bytes ?? DEFAULT_MAX_BYTES, MAX_IO_BYTES),
        encoding: enc,
      },
      signal,
    );
    return {
      port: t.alias ?? t.path,
      path: t.path,
      written: payload?.length ?? 0,
      bytes: r.data.length,
      ...answer(r.data, a.format ?? 'text', enc),
      ended: r.ended,
      ...(r.match !== undefined ? { match: r.match } : {}),
      reused_port: !lease.opened,
      timings: { open_ms: ms(lease.openMs), write_ms: ms(write_ms), first_byte_ms: r.firstByteMs === null ? null : ms(r.firstByteMs), read_ms: ms(r.readMs), total_ms: ms(performance.now() - t0) },
    };
  });
}

/** serial.write's answer. */
export interface WriteResult {
  port: string;
  path: string;
  written: number;
  write_ms: number;
}

/** serial.write: sends bytes (handed to the OS driver when this returns). */
export async function write(pool: PortPool, t: Target, a: { data: Payload; settings?: PortSettings }, signal: AbortSignal): Promise<WriteResult> {
  const bytes = payloadBytes(a.data, 'data');
  return withPort(pool, t, a.settings, signal, async (lease) => {
    const t0 = performance.now();
    await early(lease.link.write(bytes, signal));
    return { port: t.alias ?? t.path, path: t.path, written: bytes.length, write_ms: ms(performance.now() - t0) };
  });
}

/** serial.set_signals. */
export async function setSignals(pool: PortPool, t: Target, a: SignalChange & { settings?: PortSettings }, signal: AbortSignal) {
  if (a.dtr === undefined && a.rts === undefined && a.brk === undefined && a.break_ms === undefined) {
    throw new SerialFault('invalid_arguments', 'bad_settings', 'Give at least one of dtr, rts, brk or break_ms.');
  }
  if (a.brk !== undefined && a.break_ms !== undefined) throw new SerialFault('invalid_arguments', 'bad_settings', 'Give brk or break_ms, not both.');
  return withPort(pool, t, a.settings, signal, async (lease) => ({ port: t.alias ?? t.path, path: t.path, ...(await early(applySignals(lease.link, a, signal))) }));
}

/** serial.get_signals. */
export async function getSignals(pool: PortPool, t: Target, a: { settings?: PortSettings }, signal: AbortSignal) {
  return withPort(pool, t, a.settings, signal, async (lease) => ({ port: t.alias ?? t.path, path: t.path, ...(await early(readSignals(lease.link))) }));
}

/** serial.monitor's arguments. */
export interface MonitorArgs {
  duration_ms: number;
  max_bytes?: number;
  encoding?: TextEncoding;
  format?: 'lines' | AnswerFormat;
  flush_input?: boolean;
  settings?: PortSettings;
}

/** serial.monitor's answer. */
export interface MonitorResult {
  port: string;
  path: string;
  duration_ms: number;
  bytes: number;
  kept_bytes: number;
  overflow_bytes: number;
  line_count: number;
  lines?: Line[];
  text?: string;
  base64?: string;
  first_byte_ms: number | null;
}

/** serial.monitor: records what the port sends for `duration_ms`. */
export async function monitor(pool: PortPool, t: Target, a: MonitorArgs, signal: AbortSignal, progress: (p: MonitorProgress) => void): Promise<MonitorResult> {
  if (a.duration_ms > MAX_MONITOR_MS) throw new SerialFault('invalid_arguments', 'bad_settings', 'duration_ms is longer than 10 minutes.');
  const enc = a.encoding ?? 'utf8';
  const format = a.format ?? 'lines';
  return withPort(pool, t, a.settings, signal, async (lease) => {
    if (a.flush_input === true) lease.link.discardInput();
    const rec = await monitorLink(lease.link, { durationMs: a.duration_ms, maxBytes: Math.min(a.max_bytes ?? MAX_IO_BYTES, MAX_IO_BYTES), encoding: enc }, signal, progress);
    return {
      port: t.alias ?? t.path,
      path: t.path,
      duration_ms: ms(rec.durationMs),
      bytes: rec.bytes,
      kept_bytes: rec.data.length,
      overflow_bytes: rec.overflowBytes,
      line_count: rec.lineCount,
      ...(format === 'lines' ? { lines: rec.lines } : answer(rec.data, format, enc)),
      first_byte_ms: rec.firstByteMs === null ? null : ms(rec.firstByteMs),
    };
  });
}

/** serial.list_ports: the OS list and the grants, merged (ports are never opened). */
export async function list(binding: () => Promise<Binding>, grants: readonly PortGrant[], platform: NodeJS.Platform = process.platform): Promise<ListedPort[]> {
  let infos: PortInfo[];
  try {
    infos = await (await binding()).list();
  } catch (e) {
    if (e instanceof SerialFault) throw e;
    // Listing needs udevadm on Linux; without it the granted ports are still shown.
    infos = [];
  }
  return listPorts(platform, infos, grants);
}
