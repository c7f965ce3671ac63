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

/**
 * A live node already has this node id: another process (two processes with one id would LISTEN on one
 * channel and both act for its devices), or this node's previous process whose heartbeats have not lapsed
 * yet (it waited `liveMs` for that before refusing). Also what a running node learns when another process
 * has joined under its id since (its heartbeat finds the row taken): it stops acting as the node.
 */
export class ClusterNodeIdTakenError extends SaidError {
  readonly code = 'cluster_node_id_taken' as const;
  constructor(readonly nodeId: string, readonly lastSeen: string) {
    super(coreMessage('core.cluster.node_id_taken', { node: nodeId, last_seen: lastSeen }));
    this.name = 'ClusterNodeIdTakenError';
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
  /**
   * How long `join` waits for a live row with this node id to lapse before refusing (a node restarted after
   * a crash finds its previous process's row still live for up to `liveMs`). Default `liveMs + heartbeatMs`.
   */
  takenWaitMs?: number;
  /**
   * Another process joined under this node id while this one ran (its heartbeat found the row taken): the
   * heartbeat has stopped; the owner must stop serving as this node. Logged as an error in any case.
   */
  onIdTaken?(e: ClusterNodeIdTakenError): void;
}

/** This process as a node of the cluster. */
export class ClusterNode {
  readonly nodeId: string;
  readonly heartbeatMs: number;
  readonly liveMs: number;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | null = null;
  /** This process's row (`started_at` from its join): its heartbeats renew only that row. */
  private startedAt: string | undefined;

  constructor(private readonly o: ClusterNodeOptions) {
    this.nodeId = checkNodeId(o.nodeId);
    this.heartbeatMs = o.heartbeatMs ?? NODE_HEARTBEAT_MS;
    this.liveMs = o.liveMs ?? NODE_LIVE_MS;
  }

  /**
   * Joins the cluster; throws {@link ClusterConfigMismatchError} (having written nothing) on a config mismatch,
   * and {@link ClusterNodeIdTakenError} when a live node keeps this node id for longer than `takenWaitMs`.
   */
  async join(): Promise<void> {
    const waitMs = this.o.takenWaitMs ?? this.liveMs + this.heartbeatMs;
    const until = Date.now() + waitMs;
    for (;;) {
      const r = await this.o.store.joinCluster(this.nodeId, this.o.config, this.liveMs);
      if (r.joined) {
        this.startedAt = r.started_at;
        return;
      }
      if (!r.taken) throw new ClusterConfigMismatchError(this.nodeId, r.differing.map((n) => ({ node_id: n.node_id, keys: differingKeys(this.o.config, n.config) })));
      const left = until - Date.now();
      if (left <= 0) throw new ClusterNodeIdTakenError(this.nodeId, r.taken.last_seen);
      this.o.log.warn({ node_id: this.nodeId, last_seen: r.taken.last_seen }, 'a live node has this node id (a previous process of this node, or another one): waiting for it to lapse');
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, this.heartbeatMs)));
    }
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
        const beat = await this.o.store.nodeHeartbeat(this.nodeId, this.startedAt ?? '');
        if (beat === 'taken') return this.lostId();
        if (beat === 'gone') {
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

  /** Another process joined under this node id: stop the heartbeat (its row is not ours) and tell the owner. */
  private async lostId(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    const row = (await this.o.store.clusterNodes()).find((n) => n.node_id === this.nodeId);
    const e = new ClusterNodeIdTakenError(this.nodeId, row?.last_seen ?? new Date().toISOString());
    this.o.log.error({ node_id: this.nodeId }, e.message);
    this.o.onIdTaken?.(e);
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
    // Only this process's row: another process that took the id keeps its own.
    if (this.startedAt) await this.o.store.leaveCluster(this.nodeId, this.startedAt);
  }
}
