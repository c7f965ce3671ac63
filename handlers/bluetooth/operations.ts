/**
 * The Bluetooth operations behind the functions, on a session and its pool. No SDK dependency: each takes
 * an AbortSignal and a progress callback and throws `BleError` for typed failures. Nothing read, written
 * or notified is logged here (values go only into results and progress).
 */
import { BleError } from './errors.js';
import type { NobleCharacteristic, NoblePeripheral } from './noble-types.js';
import type { Connection, ConnectionPool } from './pool.js';
import { abortError, onAbort, stateError, type BleSession } from './session.js';
import { normPeripheralId, normUuid } from './uuid.js';

/** Progress as the operations report it (the host throttles it to 10 a second). */
export type ProgressFn = (p: { progress?: number; total?: number; message?: string }) => void;

/** One peripheral in scan results. */
export interface ScanHit {
  id: string;
  address?: string;
  name?: string;
  rssi: number;
  services: string[];
  manufacturer_data?: string;
  connectable?: boolean;
  alias?: string;
}

/** Scan filters and bounds. */
export interface ScanArgs {
  duration_ms: number;
  max_results: number;
  services?: string[];
  name_prefix?: string;
  min_rssi?: number;
}

function hit(p: NoblePeripheral, alias: (id: string, address?: string) => string | undefined): ScanHit {
  const h: ScanHit = { id: normPeripheralId(p.id), rssi: p.rssi, services: (p.advertisement.serviceUuids ?? []).map((u) => normUuid(u) ?? u) };
  if (p.address && p.address !== 'unknown') h.address = p.address.toLowerCase();
  if (p.advertisement.localName) h.name = p.advertisement.localName;
  if (p.advertisement.manufacturerData?.length) h.manufacturer_data = p.advertisement.manufacturerData.toString('hex');
  if (typeof p.connectable === 'boolean') h.connectable = p.connectable;
  const a = alias(p.id, p.address);
  if (a) h.alias = a;
  return h;
}

/**
 * A bounded scan: ends after `duration_ms` or `max_results` peripherals, whichever comes first; a
 * cancel or timeout stops it at once (the adapter stops scanning when no other call scans).
 */
export async function scan(session: BleSession, a: ScanArgs, signal: AbortSignal, progress: ProgressFn, alias: (id: string, address?: string) => string | undefined): Promise<{ peripherals: ScanHit[]; complete: boolean }> {
  const found = new Map<string, ScanHit>();
  const wanted = (a.services ?? []).map((s) => normUuid(s) ?? s);
  let full: () => void = () => {};
  const fullP = new Promise<void>((r) => (full = r));
  const leave = await session.joinScan((p) => {
    const h = hit(p, alias);
    if (a.min_rssi !== undefined && h.rssi < a.min_rssi) return;
    if (a.name_prefix !== undefined && !(h.name ?? '').startsWith(a.name_prefix)) return;
    if (wanted.length && !wanted.some((w) => h.services.includes(w))) return;
    const before = found.has(h.id);
    if (!before && found.size >= a.max_results) return;
    // Later advertisements refresh RSSI and fill in what an earlier packet lacked.
    found.set(h.id, { ...found.get(h.id), ...h });
    if (!before) {
      progress({ progress: found.size, total: a.max_results, message: `${found.size} found` });
      if (found.size >= a.max_results) full();
    }
  }, signal);
  let timer: NodeJS.Timeout | undefined;
  let offAbort = () => {};
  let offState = () => {};
  try {
    const complete = await Promise.race([
      fullP.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), a.duration_ms))),
      new Promise<never>((_, reject) => (offAbort = onAbort(signal, () => reject(abortError(signal))))),
      // An adapter switched off mid-scan ends it with that reason rather than a quietly short list.
      new Promise<never>((_, reject) => (offState = session.onState((s) => (s === 'poweredOn' ? undefined : reject(stateError(s)))))),
    ]);
    return { peripherals: [...found.values()].sort((x, y) => y.rssi - x.rssi), complete };
  } finally {
    clearTimeout(timer);
    offAbort();
    offState();
    leave();
  }
}

/** A pooled connection for the length of `fn`; a call stopped mid-request closes the link (noble may still answer it). */
export async function withConnection<T>(pool: ConnectionPool, id: string, signal: AbortSignal, fn: (c: Connection) => Promise<T>): Promise<T> {
  const conn = await pool.acquire(id, signal);
  try {
    return await fn(conn);
  } catch (e) {
    if (signal.aborted) pool.close(id);
    throw e;
  } finally {
    pool.release(conn);
  }
}

/** One service with its characteristics, as `bluetooth.services` reports it. */
export interface ServiceInfo {
  uuid: string;
  name?: string;
  characteristics: { uuid: string; name?: string; properties: string[] }[];
}

/** Discovers services and characteristics; `allowService` filters to the granted ones. */
export async function services(conn: Connection, signal: AbortSignal, allowService: (uuid: string) => boolean): Promise<ServiceInfo[]> {
  const all = await conn.discover(signal);
  const out: ServiceInfo[] = [];
  for (const { service, characteristics } of all) {
    const uuid = normUuid(service.uuid) ?? service.uuid;
    if (!allowService(uuid)) continue;
    out.push({
      uuid,
      ...(service.name ? { name: service.name } : {}),
      characteristics: characteristics.map((c) => ({ uuid: normUuid(c.uuid) ?? c.uuid, ...(c.name ? { name: c.name } : {}), properties: [...c.properties] })),
    });
  }
  return out;
}

function needs(c: NobleCharacteristic, props: string[], what: string): void {
  if (!props.some((p) => c.properties.includes(p))) {
    throw new BleError('not_supported', `That characteristic does not support ${what} (it supports: ${c.properties.join(', ') || 'nothing'}).`);
  }
}

/** Reads a characteristic's value. */
export async function read(conn: Connection, service: string, characteristic: string, signal: AbortSignal): Promise<Buffer> {
  const c = await conn.characteristic(service, characteristic, signal);
  needs(c, ['read'], 'reading');
  return conn.guard<Buffer>(signal, (ok, ko) => c.read((err, data) => (err ? ko(err) : ok(data))));
}

/** Writes a value, with or without response. */
export async function write(conn: Connection, service: string, characteristic: string, data: Buffer, withoutResponse: boolean, signal: AbortSignal): Promise<void> {
  const c = await conn.characteristic(service, characteristic, signal);
  needs(c, withoutResponse ? ['writeWithoutResponse'] : ['write'], withoutResponse ? 'writing without response' : 'writing with response');
  await conn.guard<void>(signal, (ok, ko) => c.write(data, withoutResponse, (err) => (err ? ko(err) : ok())));
}

/** Subscription bounds. */
export interface SubscribeArgs {
  duration_ms: number;
  count?: number;
  max_values: number;
}

/** What a subscription collected. */
export interface SubscribeResult {
  values: { at_ms: number; hex: string }[];
  received: number;
  truncated: boolean;
  ended: 'count' | 'duration';
}

/**
 * Notifications from one characteristic until `count` arrive or `duration_ms` passes. Cancel, timeout
 * and a dropped link end it at once; the peripheral is told to stop notifying whenever the link is up.
 */
export async function subscribe(conn: Connection, service: string, characteristic: string, a: SubscribeArgs, signal: AbortSignal, progress: ProgressFn): Promise<SubscribeResult> {
  const c = await conn.characteristic(service, characteristic, signal);
  needs(c, ['notify', 'indicate'], 'notifications');
  const started = Date.now();
  const values: SubscribeResult['values'] = [];
  let received = 0;
  let reachedCount: () => void = () => {};
  const countP = new Promise<void>((r) => (reachedCount = r));
  const onData = (data: Buffer, isNotification: boolean) => {
    if (isNotification === false || (a.count && received >= a.count)) return;
    received++;
    const v = { at_ms: Date.now() - started, hex: data.toString('hex') };
    if (values.length < a.max_values) values.push(v);
    progress({ progress: received, ...(a.count ? { total: a.count } : {}), message: v.hex });
    if (a.count && received >= a.count) reachedCount();
  };
  // noble matches an acknowledgement to a request by event name only: when the link stays pooled, wait
  // (briefly) for the unsubscribe's, or the next call's subscribe would take it for its own. A call that
  // was stopped returns at once: its link is closed (withConnection), so no late answer can be misread.
  const unsubscribe = async () => {
    c.removeListener('data', onData);
    if (conn.lost) return;
    const acked = new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 2000);
      c.unsubscribe(() => {
        clearTimeout(t);
        resolve();
      });
    });
    if (!signal.aborted) await acked;
  };
  c.on('data', onData);
  try {
    await conn.guard<void>(signal, (ok, ko) => c.subscribe((err) => (err ? ko(err) : ok())));
    let timer: NodeJS.Timeout | undefined;
    try {
      const ended = await conn.guard<'count' | 'duration'>(signal, (ok) => {
        timer = setTimeout(() => ok('duration'), Math.max(0, a.duration_ms - (Date.now() - started)));
        void countP.then(() => ok('count'));
      });
      return { values, received, truncated: received > values.length, ended };
    } finally {
      clearTimeout(timer);
    }
  } finally {
    await unsubscribe();
  }
}
