/**
 * The handler's Bluetooth state between calls: noble, loaded on first use, its session and connection
 * pool. No SDK dependency. A WebSocket binding whose socket closed is loaded again on the next call.
 */
import { BleError } from './errors.js';
import { loadNoble, type BindingChoice, type LoadedNoble } from './noble-loader.js';
import type { Noble } from './noble-types.js';
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

/** Why noble could not load, from a BleError or a kit wire error (`details.reason`), if it says. */
function loadReason(e: unknown): string | undefined {
  if (e instanceof BleError) return e.fault;
  const r = (e as { details?: { reason?: unknown } } | null)?.details?.reason;
  return typeof r === 'string' ? r : undefined;
}

type Loaded = { noble: LoadedNoble; session: BleSession; pool: ConnectionPool };

/** noble, its session and pool, created on first use. */
export class BleRuntime {
  private loaded: Promise<Loaded> | undefined;
  private current: Loaded | undefined;

  constructor(
    readonly options: BleOptions,
    private readonly lines: NobleLineSink,
    /** Imports noble's platform binding (the kit's optionalNative in production). */
    private readonly platform: () => Promise<Noble>,
    /**
     * True when the system says, without noble, that there is no adapter (production: noble-loader's
     * `linuxWithoutBluetooth`); `state` then answers `no_adapter` without loading the platform binding.
     */
    private readonly knownAbsent: () => boolean = () => false,
  ) {}

  /** The session and pool; rejects when noble cannot load (BleError, or the loader's typed error). */
  async get(): Promise<{ session: BleSession; pool: ConnectionPool }> {
    if (this.current?.noble.dead()) this.unload();
    this.loaded ??= loadNoble(this.options.binding, this.lines, this.platform).then((noble) => {
      const session = new BleSession(noble.noble);
      this.current = { noble, session, pool: new ConnectionPool(session, this.options) };
      return this.current;
    });
    // A failure is not kept: the next call tries again (an adapter plugged in, a module installed).
    const p = this.loaded;
    p.catch(() => {
      if (this.loaded === p) this.loaded = undefined;
    });
    return p;
  }

  /** The adapter as `bluetooth.state` reports it; a machine without Bluetooth is an answer, not an error. */
  async state(signal: AbortSignal): Promise<AdapterState> {
    // The answer noble would give after loading, without loading it (≈ 150–200 ms of import).
    if (this.options.binding === 'default' && !this.current && this.knownAbsent()) return { present: false, powered: false, authorised: true, reason: 'no_adapter' };
    let session: BleSession;
    try {
      session = (await this.get()).session;
    } catch (e) {
      const reason = loadReason(e);
      if (reason === 'os_refused') return { present: true, powered: false, authorised: false, reason: 'os_refused' };
      if (reason === 'not_installed' || reason === 'unsupported_platform') return { present: false, powered: false, authorised: true, reason };
      if (reason) return { present: false, powered: false, authorised: true, reason: 'no_adapter' };
      throw e;
    }
    return describeState(await session.settledState(signal));
  }

  /** Closes every pooled connection (idle, pause). */
  closeConnections(): void {
    this.current?.pool.closeAll();
  }

  /** Closes connections and lets go of noble's binding (shutdown). */
  unload(): void {
    const l = this.current;
    this.current = undefined;
    this.loaded = undefined;
    if (!l) return;
    l.pool.dispose();
    l.noble.close();
  }
}
