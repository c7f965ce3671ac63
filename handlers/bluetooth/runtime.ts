/**
 * The handler's Bluetooth state between calls: noble, loaded on first use, its session and connection
 * pool. No SDK dependency. A WebSocket binding whose socket closed is loaded again on the next call.
 */
import { BleError } from './errors.js';
import { loadNoble, type BindingChoice, type LoadedNoble } from './noble-loader.js';
import { ConnectionPool, type PoolOptions } from './pool.js';
import type { NobleLineSink } from './quiet-console.js';
import { BleSession, describeState, type AdapterState } from './session.js';

/** Handler options (`handlers.bluetooth` in the config). */
export interface BleOptions extends PoolOptions {
  binding: BindingChoice;
}

/** Reads `handlers.bluetooth`; throws an Error naming the bad key. */
export function parseOptions(o: Record<string, unknown>): BleOptions {
  const known = new Set(['binding', 'idle_ms', 'find_ms']);
  for (const k of Object.keys(o)) if (!known.has(k)) throw new Error(`handlers.bluetooth: unknown option "${k}" (known: binding, idle_ms, find_ms)`);
  const binding = o['binding'] ?? 'default';
  if (binding !== 'default' && binding !== 'websocket') throw new Error('handlers.bluetooth.binding: must be "default" or "websocket" (test only)');
  const ms = (k: string, def: number, max: number): number => {
    const v = o[k] ?? def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) throw new Error(`handlers.bluetooth.${k}: an integer from 0 to ${max}`);
    return v;
  };
  return { binding, idleMs: ms('idle_ms', 5000, 600_000), findMs: ms('find_ms', 10_000, 60_000) };
}

/** noble, its session and pool, created on first use. */
export class BleRuntime {
  private loaded: { noble: LoadedNoble; session: BleSession; pool: ConnectionPool } | undefined;

  constructor(
    readonly options: BleOptions,
    private readonly lines: NobleLineSink,
  ) {}

  /** The session and pool; throws `BleError` when noble cannot load. */
  get(): { session: BleSession; pool: ConnectionPool } {
    if (this.loaded?.noble.dead()) this.unload();
    if (!this.loaded) {
      const noble = loadNoble(this.options.binding, this.lines);
      const session = new BleSession(noble.noble);
      this.loaded = { noble, session, pool: new ConnectionPool(session, this.options) };
    }
    return this.loaded;
  }

  /** The adapter as `bluetooth.state` reports it; a machine without Bluetooth is an answer, not an error. */
  async state(signal: AbortSignal): Promise<AdapterState> {
    let session: BleSession;
    try {
      session = this.get().session;
    } catch (e) {
      if (e instanceof BleError && e.fault === 'os_refused') return { present: true, powered: false, authorised: false, reason: 'os_refused' };
      if (e instanceof BleError && e.fault === 'not_installed') return { present: false, powered: false, authorised: true, reason: 'not_installed' };
      if (e instanceof BleError) return { present: false, powered: false, authorised: true, reason: 'no_adapter' };
      throw e;
    }
    return describeState(await session.settledState(signal));
  }

  /** Closes every pooled connection (idle, pause). */
  closeConnections(): void {
    this.loaded?.pool.closeAll();
  }

  /** Closes connections and lets go of noble's binding (shutdown). */
  unload(): void {
    const l = this.loaded;
    this.loaded = undefined;
    if (!l) return;
    l.pool.dispose();
    l.noble.close();
  }
}
