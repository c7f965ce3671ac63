/**
 * One adapter through noble: its state, the peripherals seen advertising, and one shared scan that any
 * number of callers can join (noble runs one scan per adapter; a call that stops it must not stop another's).
 */
import { BleError } from './errors.js';
import type { Noble, NoblePeripheral, NobleState } from './noble-types.js';
import { normPeripheralId } from './uuid.js';

/** The adapter as `bluetooth.state` reports it. */
export interface AdapterState {
  present: boolean;
  powered: boolean;
  authorised: boolean;
  reason?: 'no_adapter' | 'not_installed' | 'unsupported_platform' | 'powered_off' | 'os_refused' | 'not_ready';
}

/** Maps noble's state to the handler's view. */
export function describeState(s: NobleState): AdapterState {
  switch (s) {
    case 'poweredOn': return { present: true, powered: true, authorised: true };
    case 'poweredOff': return { present: true, powered: false, authorised: true, reason: 'powered_off' };
    case 'unauthorized': return { present: true, powered: false, authorised: false, reason: 'os_refused' };
    case 'unsupported': return { present: false, powered: false, authorised: true, reason: 'no_adapter' };
    default: return { present: true, powered: false, authorised: true, reason: 'not_ready' };
  }
}

/** The failure for an adapter that is not powered on. */
export function stateError(s: NobleState): BleError {
  switch (s) {
    case 'poweredOff': return new BleError('powered_off', 'Bluetooth is switched off on this device; switch it on and try again.');
    case 'unauthorized': return new BleError('os_refused', 'The operating system has not allowed this program to use Bluetooth; allow it in the privacy settings (macOS: System Settings > Privacy & Security > Bluetooth).');
    case 'unsupported': return new BleError('no_adapter', 'This device\'s Bluetooth adapter does not support Bluetooth Low Energy.');
    default: return new BleError('not_ready', 'The Bluetooth adapter is not ready yet (it is starting or resetting); try again in a moment.');
  }
}

/** Rejects with the signal's reason as soon as it fires; the returned function detaches. */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn();
    return () => {};
  }
  signal.addEventListener('abort', fn, { once: true });
  return () => signal.removeEventListener('abort', fn);
}

/** The error a call stopped by its signal rejects with (the host reports cancel or timeout itself). */
export function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}

type Listener = (p: NoblePeripheral) => void;

/** One noble adapter, shared by every call of the handler. */
export class BleSession {
  private readonly seen = new Map<string, NoblePeripheral>();
  private readonly scanListeners = new Set<Listener>();
  private scanStarting: Promise<void> | undefined;
  private readonly stateListeners = new Set<(s: NobleState) => void>();

  constructor(readonly noble: Noble) {
    noble.on('discover', (p: NoblePeripheral) => {
      this.seen.set(normPeripheralId(p.id), p);
      if (p.address) this.seen.set(normPeripheralId(p.address), p);
      for (const l of [...this.scanListeners]) l(p);
    });
    noble.on('stateChange', (s: NobleState) => {
      if (s !== 'poweredOn') this.scanStarting = undefined;
      for (const l of [...this.stateListeners]) l(s);
    });
  }

  /** The adapter state now (reading it initialises noble's binding). */
  get state(): NobleState {
    return this.noble.state;
  }

  /** Calls `fn` on every state change until the returned function is called. */
  onState(fn: (s: NobleState) => void): () => void {
    this.stateListeners.add(fn);
    return () => this.stateListeners.delete(fn);
  }

  /** Waits (up to `ms`) for the adapter to leave `unknown`/`resetting`; returns the state then. */
  async settledState(signal: AbortSignal, ms = 5000): Promise<NobleState> {
    const now = this.state;
    if (now !== 'unknown' && now !== 'resetting') return now;
    return new Promise<NobleState>((resolve, reject) => {
      const done = (fin: () => void) => {
        clearTimeout(timer);
        off();
        offAbort();
        fin();
      };
      const timer = setTimeout(() => done(() => resolve(this.state)), ms);
      const off = this.onState((s) => {
        if (s !== 'unknown' && s !== 'resetting') done(() => resolve(s));
      });
      const offAbort = onAbort(signal, () => done(() => reject(abortError(signal))));
    });
  }

  /** Resolves when the adapter is powered on; throws its state as a typed failure otherwise. */
  async ready(signal: AbortSignal): Promise<void> {
    const s = await this.settledState(signal);
    if (s !== 'poweredOn') throw stateError(s);
  }

  /** A peripheral seen advertising since noble loaded, by id or address. */
  known(id: string): NoblePeripheral | undefined {
    return this.seen.get(normPeripheralId(id));
  }

  /**
   * Joins the shared scan: `onFound` gets every advertisement (duplicates included) until the returned
   * function is called; the scan stops when its last listener leaves.
   */
  async joinScan(onFound: Listener, signal: AbortSignal): Promise<() => void> {
    await this.ready(signal);
    this.scanListeners.add(onFound);
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      this.scanListeners.delete(onFound);
      if (this.scanListeners.size === 0 && this.scanStarting) {
        this.scanStarting = undefined;
        this.noble.stopScanning();
      }
    };
    try {
      // Duplicates on: every joiner dedupes for itself, and one that joins late still sees everyone.
      this.scanStarting ??= new Promise<void>((resolve, reject) =>
        this.noble.startScanning([], true, (err) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve())),
      );
      const offAbort = onAbort(signal, leave);
      await this.scanStarting.finally(offAbort);
      if (signal.aborted) throw abortError(signal);
    } catch (e) {
      leave();
      if (e instanceof Error && /state is (\w+)/.test(e.message)) throw stateError((/state is (\w+)/.exec(e.message)?.[1] ?? 'unknown') as NobleState);
      throw e;
    }
    return leave;
  }

  /** The peripheral `id`: one seen already, or scanned for until it advertises (at most `ms`). */
  async find(id: string, signal: AbortSignal, ms: number): Promise<NoblePeripheral> {
    const have = this.known(id);
    if (have) return have;
    const want = normPeripheralId(id);
    let found: (p: NoblePeripheral) => void = () => {};
    const seen = new Promise<NoblePeripheral>((resolve) => (found = resolve));
    const leave = await this.joinScan((p) => {
      if (normPeripheralId(p.id) === want || (p.address && normPeripheralId(p.address) === want)) found(p);
    }, signal);
    let timer: NodeJS.Timeout | undefined;
    let offAbort = () => {};
    try {
      return await Promise.race([
        seen,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new BleError('not_found', 'The Bluetooth device was not found nearby; check that it is on, in range and not connected to another device.')), ms);
          offAbort = onAbort(signal, () => reject(abortError(signal)));
        }),
      ]);
    } finally {
      clearTimeout(timer);
      offAbort();
      leave();
    }
  }
}
