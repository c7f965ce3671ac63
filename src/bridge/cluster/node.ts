/**
 * This bridge process as a node of the cluster (issue 34): it joins (refusing when its shared config differs
 * from the live nodes'), renews its `last_seen` and the leases of the device sessions it holds on one
 * heartbeat, answers the cluster part of `GET /health`, and leaves on a clean stop.
 */
import type { Logger } from '../../base/logger.js';
import { coreMessage } from '../../i18n/index.js';
import { SaidError } from '../../i18n/said.js';
import type { AsyncBridgeStore, ClusterNodeRecord, NodeConfigDigest } from '../store/async-store.js';
import { checkNodeId } from './bus.js';
import { differingKeys } from './config-digest.js';

/** How often a node renews its row and its sessions' leases, by default. */
export const NODE_HEARTBEAT_MS = 5_000;
/**
 * How long a node counts as live after its last heartbeat, and how long its sessions' leases run, by default:
 * three heartbeats, so one late heartbeat on a busy machine does not lapse them.
 */
export const NODE_LIVE_MS = 3 * NODE_HEARTBEAT_MS;

/** This node's shared config (`config-digest.ts`) differs from the live nodes': it refuses to join. */
export class ClusterConfigMismatchError extends SaidError {
  readonly code = 'cluster_config_mismatch' as const;
  constructor(readonly nodeId: string, readonly differing: { node_id: string; keys: string[] }[]) {
    const keys = [...new Set(differing.flatMap((d) => d.keys))].sort();
    super(coreMessage('core.cluster.config_mismatch', { node: nodeId, keys: keys.map((k) => `"${k}"`).join(', '), nodes: differing.map((d) => d.node_id).join(', ') }));
    this.name = 'ClusterConfigMismatchError';
  }
}

/** `GET /health`'s cluster part. */
export interface ClusterHealth {
  node_id: string;
  cluster: { nodes: { node_id: string; last_seen: string }[] };
}

/** Options of {@link ClusterNode}. */
export interface ClusterNodeOptions {
  store: AsyncBridgeStore;
  nodeId: string;
  config: NodeConfigDigest;
  log: Logger;
  /** Default {@link NODE_HEARTBEAT_MS}. */
  heartbeatMs?: number;
  /** Default {@link NODE_LIVE_MS}: a node silent longer is not live, and its sessions' leases lapse. */
  liveMs?: number;
}

/** This process as a node of the cluster. */
export class ClusterNode {
  readonly nodeId: string;
  readonly heartbeatMs: number;
  readonly liveMs: number;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | null = null;

  constructor(private readonly o: ClusterNodeOptions) {
    this.nodeId = checkNodeId(o.nodeId);
    this.heartbeatMs = o.heartbeatMs ?? NODE_HEARTBEAT_MS;
    this.liveMs = o.liveMs ?? NODE_LIVE_MS;
  }

  /** Joins the cluster; throws {@link ClusterConfigMismatchError} (having written nothing) on a config mismatch. */
  async join(): Promise<void> {
    const r = await this.o.store.joinCluster(this.nodeId, this.o.config, this.liveMs);
    if (!r.joined) throw new ClusterConfigMismatchError(this.nodeId, r.differing.map((n) => ({ node_id: n.node_id, keys: differingKeys(this.o.config, n.config) })));
  }

  /**
   * Starts the heartbeat: every `heartbeatMs` the node's `last_seen` and the leases of its device sessions are
   * renewed. A failed beat (the store is down) is logged and the next one tries again.
   */
  startHeartbeat(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.beat(), this.heartbeatMs);
    this.timer.unref();
  }

  /** One heartbeat now; resolves when it is written (or has failed and been logged). */
  beat(): Promise<void> {
    this.beating ??= (async () => {
      try {
        if (!(await this.o.store.nodeHeartbeat(this.nodeId))) {
          this.o.log.warn({ node_id: this.nodeId }, 'this node\'s row was gone from cluster_nodes; joining again');
          await this.join();
        }
        await this.o.store.renewLeases(this.nodeId, this.liveMs);
      } catch (e) {
        this.o.log.error({ node_id: this.nodeId, err: (e as Error).message }, 'the cluster heartbeat failed');
      } finally {
        this.beating = null;
      }
    })();
    return this.beating;
  }

  /** `{ node_id, cluster: { nodes: [{ node_id, last_seen }] } }` for `GET /health`: every node on record. */
  async health(): Promise<ClusterHealth> {
    const nodes: ClusterNodeRecord[] = await this.o.store.clusterNodes();
    return { node_id: this.nodeId, cluster: { nodes: nodes.map((n) => ({ node_id: n.node_id, last_seen: n.last_seen })) } };
  }

  /** Stops the heartbeat and removes the node's row (its sessions' leases lapse on their own). */
  async leave(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.beating;
    await this.o.store.leaveCluster(this.nodeId);
  }
}
