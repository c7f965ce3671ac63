/**
 * The cluster bus of a single bridge process (SQLite): the process is the whole cluster, so a message goes to
 * this process's handlers, through the store, after the transaction it was sent in commits (as on
 * PostgreSQL). Nothing is ever missed, so `caughtUp` runs once, at start.
 */
import type { Logger } from '../../base/logger.js';
import type { SqliteBridgeStore } from '../store/sqlite-store.js';
import type { StoreOps } from '../store/async-store.js';
import { ALL_NODES_CHANNEL, checkNodeId, decodeMessage, encodeMessage, nodeChannel, type BusHandler, type BusMessage, type CatchUpReason, type ClusterBus } from './bus.js';

/** The one-process implementation of {@link ClusterBus}. */
export class LocalBus implements ClusterBus {
  readonly nodeId: string;
  private readonly handlers = new Set<BusHandler>();
  private stopListening: (() => void) | undefined;
  private closed = false;

  private readonly store: SqliteBridgeStore;

  constructor(private readonly o: { store: SqliteBridgeStore; nodeId: string; log: Logger; caughtUp?: (reason: CatchUpReason) => Promise<void> | void }) {
    this.nodeId = checkNodeId(o.nodeId);
    this.store = o.store;
  }

  async start(): Promise<void> {
    const mine = nodeChannel(this.nodeId);
    this.stopListening = this.store.listen((channel, payload) => {
      if (channel !== mine && channel !== ALL_NODES_CHANNEL) return;
      const m = decodeMessage(payload);
      if (!m) return;
      for (const h of this.handlers) {
        try {
          h(m);
        } catch (e) {
          this.o.log.error({ err: String(e), type: m.type }, 'a cluster bus handler failed');
        }
      }
    });
    await this.o.caughtUp?.('start');
  }

  subscribe(handler: BusHandler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  async notify(to: string, message: BusMessage, tx?: StoreOps): Promise<void> {
    await this.send(nodeChannel(to), message, tx);
  }

  async broadcast(message: BusMessage, tx?: StoreOps): Promise<void> {
    await this.send(ALL_NODES_CHANNEL, message, tx);
  }

  private async send(channel: string, message: BusMessage, tx?: StoreOps): Promise<void> {
    if (this.closed) throw new Error('the cluster bus is closed');
    await (tx ?? this.store).notify(channel, encodeMessage(message));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopListening?.();
  }
}
