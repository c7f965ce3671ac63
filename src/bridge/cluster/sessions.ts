/**
 * One live session per device across the cluster, with fencing (issue 34). At hello a node claims the device's
 * session in the store and gets a new epoch; the newest claim wins. In the same transaction the node that held
 * the replaced session is told through the bus (delivered on commit), and closes that device's older sessions
 * with 4001. Whatever a session does later on the shared state (an answer, a note, an outcome) is checked with
 * `fencedCall(epoch)` in the transaction that writes it, so a late answer from a replaced session is refused.
 */
import type { StoredCall } from '../store.js';
import type { AsyncBridgeStore, StoreOps } from '../store/async-store.js';
import type { ClusterBus } from './bus.js';

/** A write from a device session that a newer one has replaced (fencing): refused, nothing written. */
export class StaleSessionError extends Error {
  readonly code = 'session_replaced' as const;
  constructor(readonly workspaceId: string, readonly deviceId: string, readonly epoch: number) {
    super(`the session ${epoch} of device ${deviceId} was replaced by a newer one; what it sent is refused`);
    this.name = 'StaleSessionError';
  }
}

/** Told to close the device's sessions older than `epoch` (4001) and stop acting for them. */
export type ReplacedHandler = (workspaceId: string, deviceId: string, epoch: number) => void;

/** A node's side of the device sessions. */
export class DeviceSessions {
  constructor(
    private readonly o: {
      store: AsyncBridgeStore;
      bus: ClusterBus;
      leaseMs: number;
      /** A session was given up (the device is on no node now, unless another claimed it meanwhile). */
      onReleased?: (workspaceId: string, deviceId: string) => void;
    },
  ) {}

  /**
   * Claims the device's session for this node (at hello) and returns its epoch. The node that held the
   * session it replaced (this one included) hears `session_replaced` once the claim commits.
   */
  async claim(workspaceId: string, deviceId: string, protocolVersion?: string): Promise<number> {
    return this.o.store.transaction(async (tx) => {
      const c = await tx.claimSession(workspaceId, deviceId, this.o.bus.nodeId, this.o.leaseMs, protocolVersion);
      if (c.previous) await this.o.bus.notify(c.previous.node_id, { type: 'session_replaced', workspace_id: workspaceId, device_id: deviceId, epoch: c.epoch }, tx);
      return c.epoch;
    });
  }

  /** Calls `fn` for each replacement this node must act on; returns the function that stops it. */
  onReplaced(fn: ReplacedHandler): () => void {
    return this.o.bus.subscribe((m) => {
      if (m.type === 'session_replaced') fn(m.workspace_id, m.device_id, m.epoch);
    });
  }

  /** True while `epoch` is the device's session; pass the transaction that writes what the check guards. */
  isCurrent(workspaceId: string, deviceId: string, epoch: number, tx: StoreOps = this.o.store): Promise<boolean> {
    return tx.isCurrent(workspaceId, deviceId, epoch);
  }

  /**
   * Runs `fn` in a store transaction only while `epoch` is the device's session, and throws
   * {@link StaleSessionError} (writing nothing) when a newer session replaced it. The session row is held
   * until the commit, so a claim made meanwhile waits for it: what `fn` writes is never from a replaced session.
   * The fence and the call's lock are one read (`StoreOps.fencedCall`); `fn` gets the call's record (undefined:
   * no such call), held until the commit too.
   */
  fencedCall<T>(workspaceId: string, deviceId: string, epoch: number, callId: string, fn: (tx: StoreOps, call: StoredCall | undefined) => Promise<T>): Promise<T> {
    return this.o.store.transaction(async (tx) => {
      const f = await tx.fencedCall(workspaceId, deviceId, epoch, callId);
      if (!f.current) throw new StaleSessionError(workspaceId, deviceId, epoch);
      return fn(tx, f.call);
    });
  }

  /** The session's socket closed: the device is on no node (unless a newer session replaced it already). */
  async release(workspaceId: string, deviceId: string, epoch: number): Promise<boolean> {
    const released = await this.o.store.releaseSession(workspaceId, deviceId, epoch);
    if (released) this.o.onReleased?.(workspaceId, deviceId);
    return released;
  }

  /** Renews the leases of every session this node holds (its heartbeat); returns how many. */
  renew(): Promise<number> {
    return this.o.store.renewLeases(this.o.bus.nodeId, this.o.leaseMs);
  }
}
