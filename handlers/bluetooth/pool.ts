/**
 * Connections to peripherals, kept open for a few seconds after a call (a burst of reads pays for one
 * connection) and closed when idle, when the agent pauses, and at shutdown. A peripheral that drops the
 * link mid-call fails that call with `disconnected`; the next call connects again.
 */
import { BleError } from './errors.js';
import type { NobleCharacteristic, NoblePeripheral, NobleService } from './noble-types.js';
import { abortError, onAbort, stateError, type BleSession } from './session.js';
import { normPeripheralId, normUuid } from './uuid.js';

/** Pool settings (handler options `idle_ms`, `find_ms`). */
export interface PoolOptions {
  /** How long an unused connection stays open. */
  idleMs: number;
  /** How long to scan for a peripheral not seen yet before `not_found`, and to wait for it to accept a connection. */
  findMs: number;
}

/** A live connection to one peripheral. */
export class Connection {
  /** Set when the link is gone (dropped by the peripheral, the adapter, or closed by us). */
  lost = false;
  private services: NobleService[] | undefined;
  private readonly chars = new Map<string, NobleCharacteristic[]>();
  private readonly lostListeners = new Set<() => void>();

  constructor(
    readonly id: string,
    readonly peripheral: NoblePeripheral,
  ) {}

  /** Marks the link gone and fails whoever is waiting on it with `why` (default: disconnected). */
  markLost(why?: BleError): void {
    if (this.lost) return;
    this.lost = true;
    this.why = why;
    for (const l of [...this.lostListeners]) l();
  }

  private why: BleError | undefined;

  /**
   * Runs one noble request against this link: rejects at once when the call's signal fires, the link
   * drops, or the adapter stops; `onAbandon` runs when the answer will never be used.
   */
  guard<T>(signal: AbortSignal, start: (resolve: (v: T) => void, reject: (e: unknown) => void) => void, onAbandon?: () => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        this.lostListeners.delete(lostFn);
        offAbort();
        fn();
      };
      let offAbort = () => {};
      const lostFn = () => finish(() => reject(this.why ?? new BleError('disconnected', 'The Bluetooth device disconnected during the call; the next call connects again.')));
      if (this.lost) return lostFn();
      if (signal.aborted) return finish(() => reject(abortError(signal)));
      this.lostListeners.add(lostFn);
      offAbort = onAbort(signal, () =>
        finish(() => {
          onAbandon?.();
          reject(abortError(signal));
        }),
      );
      if (settled) return;
      try {
        start(
          (v) => finish(() => resolve(v)),
          (e) => finish(() => reject(e)),
        );
      } catch (e) {
        finish(() => reject(e));
      }
    });
  }

  /** Every service with its characteristics (discovered once per connection). */
  async discover(signal: AbortSignal): Promise<{ service: NobleService; characteristics: NobleCharacteristic[] }[]> {
    this.services ??= await this.guard<NobleService[]>(signal, (ok, ko) => this.peripheral.discoverServices([], (err, s) => (err ? ko(err) : ok(s))));
    const out: { service: NobleService; characteristics: NobleCharacteristic[] }[] = [];
    for (const service of this.services) out.push({ service, characteristics: await this.characteristicsOf(service, signal) });
    return out;
  }

  private async characteristicsOf(service: NobleService, signal: AbortSignal): Promise<NobleCharacteristic[]> {
    const key = normUuid(service.uuid) ?? service.uuid;
    let c = this.chars.get(key);
    if (!c) {
      c = await this.guard<NobleCharacteristic[]>(signal, (ok, ko) => service.discoverCharacteristics([], (err, cs) => (err ? ko(err) : ok(cs))));
      this.chars.set(key, c);
    }
    return c;
  }

  /** One characteristic by service and characteristic UUID (normalised). */
  async characteristic(serviceUuid: string, charUuid: string, signal: AbortSignal): Promise<NobleCharacteristic> {
    const all = await this.discover(signal);
    const s = all.find((x) => normUuid(x.service.uuid) === serviceUuid);
    if (!s) throw new BleError('no_such_characteristic', `The Bluetooth device has no service ${serviceUuid}.`);
    const c = s.characteristics.find((x) => normUuid(x.uuid) === charUuid);
    if (!c) throw new BleError('no_such_characteristic', `Service ${serviceUuid} on the Bluetooth device has no characteristic ${charUuid}.`);
    return c;
  }
}

/** The pool of connections of one session. */
export class ConnectionPool {
  private readonly conns = new Map<string, Connection>();
  private readonly idle = new Map<string, NodeJS.Timeout>();
  private readonly offState: () => void;

  constructor(
    private readonly session: BleSession,
    private readonly opts: PoolOptions,
  ) {
    // An adapter that stops takes every link with it (noble sends no per-peripheral disconnect then).
    this.offState = session.onState((s) => {
      if (s === 'poweredOn') return;
      for (const [id, conn] of [...this.conns]) {
        this.forget(id, stateError(s));
        // noble reports no disconnect then and would still call the link connected.
        conn.peripheral.state = 'disconnected';
      }
    });
  }

  /** Ids of the open connections. */
  openIds(): string[] {
    return [...this.conns.keys()];
  }

  /** A live connection to `id` for one call; `release` it when the call ends. */
  async acquire(id: string, signal: AbortSignal): Promise<Connection> {
    const key = normPeripheralId(id);
    this.stopIdle(key);
    const have = this.conns.get(key);
    if (have && !have.lost) return have;
    await this.session.ready(signal);
    const p = await this.session.find(key, signal, this.opts.findMs);
    // A link we closed a moment ago must be gone before a new one starts, or its late disconnect event
    // would be taken for the new link's.
    if (p.state === 'disconnecting') await disconnected(p, signal);
    const conn = new Connection(key, p);
    // noble itself never gives up on a connection attempt: bound it (a peripheral held by another central
    // or gone out of range just never answers).
    const attempt = AbortSignal.any([signal, AbortSignal.timeout(this.opts.findMs)]);
    const pending = conn.guard<void>(
      attempt,
      (ok, ko) =>
        p.connect((err) =>
          err ? ko(new BleError('connect_failed', 'The Bluetooth device refused the connection or did not answer; check that it is in range and not connected elsewhere.')) : ok(),
        ),
      () => p.disconnect(),
    );
    const onDisconnect = () => {
      conn.markLost();
      if (this.conns.get(key) === conn) this.forget(key);
    };
    p.once('disconnect', onDisconnect);
    try {
      await pending;
    } catch (e) {
      p.removeListener('disconnect', onDisconnect);
      if (attempt.aborted && !signal.aborted) throw new BleError('connect_failed', 'The Bluetooth device did not accept a connection in time; check that it is in range and not connected to another device.');
      throw e;
    }
    this.conns.set(key, conn);
    return conn;
  }

  /** Ends a call's use of the connection: it closes after `idleMs` unless another call takes it. */
  release(conn: Connection): void {
    if (conn.lost || this.conns.get(conn.id) !== conn) return;
    this.stopIdle(conn.id);
    const t = setTimeout(() => this.close(conn.id), this.opts.idleMs);
    t.unref();
    this.idle.set(conn.id, t);
  }

  /** Closes one connection now; true when there was one. */
  close(id: string): boolean {
    const key = normPeripheralId(id);
    const conn = this.conns.get(key);
    this.forget(key);
    if (!conn) return false;
    if (conn.peripheral.state !== 'disconnected') conn.peripheral.disconnect();
    return true;
  }

  /** Closes one connection and waits until the peripheral reports the link down (bounded by `signal`). */
  async closeAndWait(id: string, signal: AbortSignal): Promise<boolean> {
    const conn = this.conns.get(normPeripheralId(id));
    const had = this.close(id);
    if (conn && conn.peripheral.state === 'disconnecting') await disconnected(conn.peripheral, signal);
    return had;
  }

  /** Closes every connection (idle, pause, shutdown). */
  closeAll(): void {
    for (const id of [...this.conns.keys()]) this.close(id);
  }

  /** Stops watching the adapter and closes everything. */
  dispose(): void {
    this.closeAll();
    this.offState();
  }

  private forget(key: string, why?: BleError): void {
    this.stopIdle(key);
    const conn = this.conns.get(key);
    this.conns.delete(key);
    conn?.markLost(why);
  }

  private stopIdle(key: string): void {
    const t = this.idle.get(key);
    if (t) clearTimeout(t);
    this.idle.delete(key);
  }
}

/** Resolves when `p` reports its link down (or after 3 s: some stacks never say). */
function disconnected(p: NoblePeripheral, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      p.removeListener('disconnect', done);
      offAbort();
      resolve();
    };
    const timer = setTimeout(done, 3000);
    p.once('disconnect', done);
    const offAbort = onAbort(signal, () => {
      clearTimeout(timer);
      p.removeListener('disconnect', done);
      reject(abortError(signal));
    });
  });
}
