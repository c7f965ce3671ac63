/**
 * The cluster bus of a single bridge process (SQLite): the process is the whole cluster, so a message goes to
 * this process's handlers, through the store, after the transaction it was sent in commits (as on
 * PostgreSQL). Nothing is ever missed, so `caughtUp` runs once, at start.
 */
import type { Logger } from '../../base/logger.js';
import type { SqliteBridgeStore } from '../store/sqlite-store.js';
import { ALL_NODES_CHANNEL, checkNodeId, decodeMessage, nodeChannel, type CatchUpReason, type ClusterBus } from './bus.js';
import { StoreBus } from './store-bus.js';

/** The one-process implementation of {@link ClusterBus}. */
export class LocalBus extends StoreBus implements ClusterBus {
  readonly nodeId: string;
  private stopListening: (() => void) | undefined;

  private readonly store: SqliteBridgeStore;

  constructor(private readonly o: { store: SqliteBridgeStore; nodeId: string; log: Logger; caughtUp?: (reason: CatchUpReason) => Promise<void> | void }) {
    super(o.store, o.log);
    this.nodeId = checkNodeId(o.nodeId);
    this.store = o.store;
  }

  async start(): Promise<void> {
    const mine = nodeChannel(this.nodeId);
    this.stopListening = this.store.listen((channel, payload) => {
      if (channel !== mine && channel !== ALL_NODES_CHANNEL) return;
      const m = decodeMessage(payload);
      if (m) this.dispatch(m);
    });
    await this.o.caughtUp?.('start');
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopListening?.();
  }
}
