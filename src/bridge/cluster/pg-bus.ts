/**
 * The cluster bus on PostgreSQL LISTEN/NOTIFY (issue 34). Each node LISTENs on its own dedicated `pg.Client`,
 * never a pooled one: a pool would hand the connection (and its subscriptions) to other work, and the driver
 * does not reconnect a client by itself. This bus does: when the listening connection ends, errors, or stops
 * answering a probe, it connects again with backoff, LISTENs again, and runs `caughtUp('reconnect')` so the
 * caller scans the store for the messages it missed meanwhile (NOTIFY is not durable). The listening
 * connection never opens a transaction: one left open would hold back the server's notification queue for
 * every node. Messages are sent through the store (`StoreOps.notify`, `pg_notify`), so one sent in a store
 * transaction is delivered on its commit and never on a rollback.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../../base/logger.js';
import { coreMessage } from '../../i18n/index.js';
import { SaidError } from '../../i18n/said.js';
import type { AsyncBridgeStore } from '../store/async-store.js';
import { ALL_NODES_CHANNEL, checkNodeId, decodeMessage, nodeChannel, type CatchUpReason, type ClusterBus } from './bus.js';
import { StoreBus } from './store-bus.js';

/** Options of {@link PgClusterBus}. */
export interface PgBusOptions {
  /** The database's URL (the store's; never logged: it may carry a password). */
  url: string;
  /** This node's id (`^[a-z0-9_]{1,32}$`). */
  nodeId: string;
  /** Sends: the store (its pool) outside a transaction. */
  store: Pick<AsyncBridgeStore, 'notify'>;
  /**
   * Runs after every LISTEN (the first, and each after a reconnection): scan the store for what this node may
   * have missed. The bus waits for it before it counts as caught up; a throw is logged.
   */
  caughtUp: (reason: CatchUpReason) => Promise<void> | void;
  log: Logger;
  /** First wait before connecting again (default 100 ms); doubles up to `maxBackoffMs` (default 5 s), with jitter. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** How often `caughtUp('sweep')` runs while the bus listens (default 60 s; 0: never). */
  sweepMs?: number;
  /**
   * How often the listening connection is probed (default 15 s): a connection cut without a TCP reset (a
   * partition) would otherwise stay "up" and hear nothing. A probe that takes longer than this fails.
   */
  probeMs?: number;
  /**
   * How long `start` waits for its own test message to come back on the listening connection (default 5 s).
   * It does not come back through a pooler that hands the connection to others between statements (PgBouncer
   * in transaction or statement mode): LISTEN then seems to work and hears nothing, so the node refuses to start.
   */
  deliveryCheckMs?: number;
}

/**
 * The listening connection did not hear this node's own test message: LISTEN/NOTIFY does not work through the
 * database URL (most often PgBouncer in transaction or statement pooling mode, which gives the server
 * connection to other clients between statements, and its subscriptions with it).
 */
export class BusNotDeliveringError extends SaidError {
  readonly code = 'cluster_bus_not_delivering' as const;
  constructor(readonly nodeId: string, readonly waitedMs: number) {
    super(coreMessage('core.cluster.bus_not_delivering', { node: nodeId, ms: waitedMs }));
    this.name = 'BusNotDeliveringError';
  }
}

/** The payload of the start-up test message; never a {@link BusMessage}, never handed to subscribers. */
const PROBE_PREFIX = 'aios_probe:';

/** What the bus is doing, for health checks and tests. */
export type BusState = 'idle' | 'listening' | 'reconnecting' | 'closed';

/** The PostgreSQL implementation of {@link ClusterBus}. */
export class PgClusterBus extends StoreBus implements ClusterBus {
  readonly nodeId: string;
  private client: pg.Client | null = null;
  private reconnecting: Promise<void> | null = null;
  private probe: NodeJS.Timeout | undefined;
  private sweep: NodeJS.Timeout | undefined;
  /** The catch-up scan running now: scans never overlap (a sweep waits for a reconnection's, and so on). */
  private scanning: Promise<void> = Promise.resolve();
  /** A sweep is waiting or running. */
  private sweepDue = false;
  private _state: BusState = 'idle';
  /** Start-up test messages awaited, by payload. */
  private readonly probeWaiters = new Map<string, () => void>();
  /** How many times the bus has listened again after losing its connection. */
  reconnects = 0;
  /** How many attempts to listen again have failed (the database was unreachable), in all. */
  failedAttempts = 0;

  constructor(private readonly o: PgBusOptions) {
    super(o.store, o.log);
    this.nodeId = checkNodeId(o.nodeId);
  }

  get state(): BusState {
    return this._state;
  }

  /** The name the listening connection shows in `pg_stat_activity.application_name`. */
  get applicationName(): string {
    return `aios_bridge_listen_${this.nodeId}`;
  }

  async start(): Promise<void> {
    if (this._state !== 'idle') throw new Error('the cluster bus was started already');
    await this.listen('start');
    try {
      await this.checkDelivery(this.o.deliveryCheckMs ?? 5_000);
    } catch (e) {
      await this.close();
      throw e;
    }
    const every = this.o.probeMs ?? 15_000;
    this.probe = setInterval(() => void this.checkAlive(every), every);
    this.probe.unref();
    const sweepMs = this.o.sweepMs ?? 60_000;
    if (sweepMs > 0) {
      // Only while listening (a reconnection runs its own scan once it listens again), and one sweep at a
      // time: a scan slower than the period does not pile sweeps up behind it.
      this.sweep = setInterval(() => {
        if (this._state !== 'listening' || this.sweepDue) return;
        this.sweepDue = true;
        void this.catchUp('sweep').finally(() => (this.sweepDue = false));
      }, sweepMs);
      this.sweep.unref();
    }
  }

  /** Runs the caller's scan after the one running now; a throw is logged. */
  private catchUp(reason: CatchUpReason): Promise<void> {
    this.scanning = this.scanning.then(async () => {
      if (this.closed) return;
      try {
        await this.o.caughtUp(reason);
      } catch (e) {
        this.o.log.error({ err: String(e), reason }, 'the cluster bus\'s catch-up scan failed');
      }
    });
    return this.scanning;
  }

  async close(): Promise<void> {
    this.closed = true;
    this._state = 'closed';
    clearInterval(this.probe);
    clearInterval(this.sweep);
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => undefined);
  }

  /** Connects, LISTENs on this node's channel and the all-nodes one, then runs the catch-up hook. */
  private async listen(reason: CatchUpReason): Promise<void> {
    // A connection attempt or a LISTEN into a partition would otherwise wait forever: both get the probe's time.
    const limit = this.o.probeMs ?? 15_000;
    const client = new pg.Client({ connectionString: this.o.url, keepAlive: true, application_name: this.applicationName, connectionTimeoutMillis: limit });
    // Until it is the current client, its events are not this bus's concern (a failed connect rejects).
    client.on('error', (e) => this.lost(client, e));
    client.on('end', () => this.lost(client));
    client.on('notification', (n) => this.deliver(n));
    try {
      await client.connect();
      // Channel names are identifiers (LISTEN takes no bound parameter): both come from checked node ids.
      await client.query({ text: `LISTEN ${nodeChannel(this.nodeId)}; LISTEN ${ALL_NODES_CHANNEL}`, query_timeout: limit } as pg.QueryConfig);
    } catch (e) {
      await client.end().catch(() => undefined);
      throw e;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this._state = 'listening';
    await this.catchUp(reason);
  }

  /** Sends a test message to this node's own channel through the store and waits for it on the listening connection. */
  private async checkDelivery(waitMs: number): Promise<void> {
    const nonce = `${PROBE_PREFIX}${randomUUID()}`;
    let timer: NodeJS.Timeout | undefined;
    const heard = new Promise<boolean>((resolve) => {
      this.probeWaiters.set(nonce, () => resolve(true));
      timer = setTimeout(() => resolve(false), waitMs);
    });
    try {
      await this.o.store.notify(nodeChannel(this.nodeId), nonce);
      if (!(await heard)) throw new BusNotDeliveringError(this.nodeId, waitMs);
    } finally {
      clearTimeout(timer);
      this.probeWaiters.delete(nonce);
    }
  }

  private deliver(n: pg.Notification): void {
    if (n.payload?.startsWith(PROBE_PREFIX)) {
      this.probeWaiters.get(n.payload)?.();
      return;
    }
    const message = n.payload === undefined ? null : decodeMessage(n.payload);
    if (!message) {
      this.o.log.warn({ channel: n.channel }, 'the cluster bus ignored a message it does not know');
      return;
    }
    this.dispatch(message);
  }

  /** The listening connection ended or failed: drop it and listen again on a new one. */
  private lost(client: pg.Client, e?: Error): void {
    if (client !== this.client || this.closed) return;
    this.client = null;
    this._state = 'reconnecting';
    this.o.log.warn({ node_id: this.nodeId, err: e ? e.message : 'connection ended' }, 'the cluster bus lost its listening connection; connecting again');
    void client.end().catch(() => undefined);
    this.reconnecting ??= this.reconnect().finally(() => (this.reconnecting = null));
  }

  private async reconnect(): Promise<void> {
    const first = this.o.backoffMs ?? 100;
    const max = this.o.maxBackoffMs ?? 5_000;
    for (let attempt = 0; !this.closed; attempt++) {
      const ceiling = Math.min(max, first * 2 ** attempt);
      // Jitter: nodes cut off together do not all come back in the same instant.
      await sleep(ceiling / 2 + Math.random() * (ceiling / 2));
      if (this.closed) return;
      try {
        await this.listen('reconnect');
      } catch (e) {
        this.failedAttempts++;
        this.o.log.warn({ node_id: this.nodeId, err: (e as Error).message, attempt: attempt + 1 }, 'the cluster bus could not listen again yet');
        continue;
      }
      // Lost again during the catch-up scan: that `lost` found this loop running, so it goes on.
      if (!this.client) continue;
      this.reconnects++;
      this.o.log.info({ node_id: this.nodeId, attempts: attempt + 1 }, 'the cluster bus is listening again');
      return;
    }
  }

  /** Probes the listening connection; one that does not answer in time is treated as lost. */
  private async checkAlive(timeoutMs: number): Promise<void> {
    const c = this.client;
    if (!c) return;
    try {
      await c.query({ text: 'SELECT 1', query_timeout: timeoutMs } as pg.QueryConfig);
    } catch (e) {
      this.lost(c, e as Error);
    }
  }
}

/** Waits `ms` on an unref'd timer (a reconnecting bus does not keep the process up by itself). */
function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
