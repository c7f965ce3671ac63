/**
 * What the two store-backed buses share (`LocalBus` on SQLite, `PgClusterBus` on PostgreSQL): messages go out
 * through the store's `notify` (in the sender's transaction when it gives one, so they are delivered on
 * commit), and come in to the subscribed handlers, one failing handler never stopping the others. A bus on
 * another transport (NATS) implements {@link ClusterBus} without this.
 */
import type { Logger } from '../../base/logger.js';
import type { StoreOps } from '../store/async-store.js';
import { ALL_NODES_CHANNEL, encodeMessage, nodeChannel, type BusHandler, type BusMessage, type ClusterBus } from './bus.js';

export abstract class StoreBus implements Pick<ClusterBus, 'subscribe' | 'notify' | 'broadcast'> {
  private readonly handlers = new Set<BusHandler>();
  protected closed = false;

  protected constructor(
    private readonly sendThrough: Pick<StoreOps, 'notify'>,
    protected readonly log: Logger,
  ) {}

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
    await (tx ?? this.sendThrough).notify(channel, encodeMessage(message));
  }

  /** Hands a received message to every handler. */
  protected dispatch(message: BusMessage): void {
    for (const h of this.handlers) {
      try {
        h(message);
      } catch (e) {
        this.log.error({ err: String(e), type: message.type }, 'a cluster bus handler failed');
      }
    }
  }
}
