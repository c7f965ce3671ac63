/**
 * A bridge process in the clustered mode (`store.kind: postgres`), as far as it is wired (issue 34): it opens
 * and migrates the PostgreSQL store, joins the cluster (refusing when its shared config differs from the live
 * nodes'), renews its heartbeat, listens on the cluster bus, and answers `GET /health` with the cluster's
 * nodes. The call path is not wired to PostgreSQL yet: every other route, and every device WebSocket, is
 * refused with `cluster_not_wired`, and `/health` answers 503 so a load balancer sends nothing here.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../base/logger.js';
import { sendJson } from '../../base/http-body.js';
import { storeUrl, type BridgeConfig } from '../../config/bridge-config.js';
import { APP_VERSION } from '../../version.js';
import { sendError } from '../http-util.js';
import { ClusterNotWiredError } from '../server.js';
import { PgBridgeStore } from '../store/pg-store.js';
import { configDigest } from './config-digest.js';
import { ClusterNode } from './node.js';
import { PgClusterBus } from './pg-bus.js';

/** Options of {@link ClusterNodeServer}. */
export interface ClusterNodeServerOptions {
  log: Logger;
  /** The node's heartbeat and liveness window (defaults: `NODE_HEARTBEAT_MS`, `NODE_LIVE_MS`). */
  heartbeatMs?: number;
  liveMs?: number;
  /**
   * The node stopped by itself: another process joined under its node id (`ClusterNodeIdTakenError`). The
   * node has stopped serving and left nothing of the other's; the CLI exits with an error.
   */
  onStopped?(e: Error): void;
}

/** A cluster node's process: membership, heartbeat, bus and `/health`; the call path refused. */
export class ClusterNodeServer {
  readonly nodeId: string;
  private store: PgBridgeStore | undefined;
  private bus: PgClusterBus | undefined;
  private node: ClusterNode | undefined;
  private readonly http: Server;
  private url = '';

  constructor(readonly config: BridgeConfig, private readonly o: ClusterNodeServerOptions) {
    if (config.store.kind !== 'postgres' || !config.cluster) throw new Error('a cluster node needs "store.kind: postgres" and "cluster.node_id"');
    this.nodeId = config.cluster.node_id;
    this.http = createServer((req, res) => void this.serve(req, res));
    this.http.on('upgrade', (req: IncomingMessage, socket: Duplex) => this.refuseUpgrade(socket));
  }

  /** How many nodes the cluster has on record (after `start`). */
  async nodeCount(): Promise<number> {
    return (await this.store?.clusterNodes())?.length ?? 0;
  }

  /**
   * Opens the store, joins the cluster (throws `ClusterConfigMismatchError` on a config mismatch, having
   * written nothing), starts the heartbeat and the bus, and listens. Resolves with the node's URL. A failed
   * start closes what it opened.
   */
  async start(): Promise<string> {
    const s = this.config.store;
    if (s.kind !== 'postgres') throw new Error('unreachable');
    const url = storeUrl(s);
    try {
      this.store = await PgBridgeStore.open(url, { onIdleError: (e) => this.o.log.warn({ err: e.message }, 'a PostgreSQL connection of the store failed; the pool replaces it') });
      this.node = new ClusterNode({
        store: this.store,
        nodeId: this.nodeId,
        config: configDigest(this.config),
        log: this.o.log,
        ...(this.o.heartbeatMs !== undefined ? { heartbeatMs: this.o.heartbeatMs } : {}),
        ...(this.o.liveMs !== undefined ? { liveMs: this.o.liveMs } : {}),
        // Two processes must not act as one node: the one whose id was taken stops.
        onIdTaken: (e) => void this.stop().finally(() => this.o.onStopped?.(e)),
      });
      await this.node.join();
      // Nothing is routed through the bus yet, so a reconnection has nothing to catch up on; listening now
      // still proves the node can hold its own LISTEN connection to the database.
      this.bus = new PgClusterBus({ url, nodeId: this.nodeId, store: this.store, log: this.o.log, caughtUp: () => undefined });
      await this.bus.start();
      this.node.startHeartbeat();
      const { host, port } = this.config.listen;
      await new Promise<void>((resolve, reject) => {
        this.http.once('error', reject);
        this.http.listen(port, host, () => resolve());
      });
    } catch (e) {
      await this.stop();
      throw e;
    }
    const a = this.http.address() as AddressInfo;
    this.url = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
    this.o.log.warn({ url: this.url, node_id: this.nodeId }, 'cluster node up: it refuses devices and calls (cluster_not_wired), the call path is not wired to PostgreSQL yet');
    return this.url;
  }

  /** Stops listening, leaves the cluster (removing its row) and closes the bus and the store. */
  async stop(): Promise<void> {
    if (this.http.listening) {
      this.http.closeAllConnections();
      await new Promise<void>((r) => this.http.close(() => r()));
    }
    await this.bus?.close();
    await this.node?.leave().catch((e: Error) => this.o.log.warn({ err: e.message }, 'could not remove this node from cluster_nodes'));
    await this.store?.close();
    this.bus = this.node = this.store = undefined;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://node').pathname;
    if (path === '/health' && req.method === 'GET') {
      try {
        const health = await this.node!.health();
        // 503: this node serves no devices or calls yet; a load balancer must not send it any.
        return sendJson(res, 503, { status: 'cluster_not_wired', version: APP_VERSION, bus: this.bus?.state, ...health });
      } catch (e) {
        this.o.log.warn({ err: (e as Error).message }, 'GET /health could not read the cluster\'s nodes');
        return sendJson(res, 503, { status: 'store_unavailable', version: APP_VERSION, node_id: this.nodeId });
      }
    }
    req.resume();
    sendError(res, 503, 'cluster_not_wired', new ClusterNotWiredError(this.nodeId).message);
  }

  private refuseUpgrade(socket: Duplex): void {
    const body = JSON.stringify({ error: { type: 'cluster_not_wired', message: new ClusterNotWiredError(this.nodeId).message } });
    socket.end(`HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
}
