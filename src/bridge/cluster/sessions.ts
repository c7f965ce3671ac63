/**
 * One live session per device across the cluster, with fencing (issue 34). At hello a node claims the device's
 * session in the store and gets a new epoch; the newest claim wins. In the same transaction the node that held
 * the replaced session is told through the bus (delivered on commit), and closes that device's older sessions
 * with 4001. Whatever a session does later on the shared state (an answer, a note, an outcome) is checked with
 * `fencedCall(epoch)` in the transaction that writes it, so a late answer from a replaced session is refused.
 * A node's fenced writes of one event-loop turn share one transaction (`fencedCall`).
 */
import { TurnBatch } from '../../base/turn-batch.js';
import type { StoredCall } from '../store.js';
import type { AsyncBridgeStore, FencedCallKey, StoreOps } from '../store/async-store.js';
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

/** The most writes one batch of {@link DeviceSessions.fencedCall} holds (a bound on the fenced read); more wait for the next. */
export const FENCED_BATCH_MAX = 100;

/** What a fenced write does in its batch's transaction, given its call (undefined: no such call). */
export type FencedWrite<T> = (tx: StoreOps, call: StoredCall | undefined) => Promise<T>;

/** A fenced write in its batch. */
interface QueuedWrite extends FencedCallKey {
  fn: FencedWrite<unknown>;
}

/** What a fenced write of a batch gave: `fn`'s value, or refused (a replaced session's). */
type WriteOutcome = { stale: true } | { value: unknown };

/** A node's side of the device sessions. */
export class DeviceSessions {
  /** The fenced writes of a turn, one transaction per batch; a call at most once per batch. */
  private readonly batches = new TurnBatch<QueuedWrite, WriteOutcome>({
    run: (batch) => this.commit(batch),
    max: FENCED_BATCH_MAX,
    key: (w) => `${w.workspace_id}/${w.call_id}`,
  });

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
   * `fn` gets the call's record (undefined: no such call), held until the commit too.
   *
   * The writes queued in one event-loop turn share one transaction (issue 34: a transaction per write cost
   * PostgreSQL ≈ 2.2 ms of CPU per call, and each notifying commit went through NOTIFY's one lock): one fenced
   * read for all of them (`StoreOps.fencedCalls`), each `fn` in turn, one COMMIT. One batch runs at a time;
   * what is queued meanwhile goes in the next, as does a second write to a call already in the batch. A
   * replaced session's write is refused alone; a failing transaction (the store, or an `fn` that throws) fails
   * every write of the batch, none written.
   */
  async fencedCall<T>(workspaceId: string, deviceId: string, epoch: number, callId: string, fn: FencedWrite<T>): Promise<T> {
    const r = await this.batches.add({ workspace_id: workspaceId, device_id: deviceId, epoch, call_id: callId, fn });
    if ('stale' in r) throw new StaleSessionError(workspaceId, deviceId, epoch);
    return r.value as T;
  }

  /** One transaction for the batch: one fenced read, each current write's `fn`, one COMMIT. */
  private commit(batch: QueuedWrite[]): Promise<WriteOutcome[]> {
    return this.o.store.transaction(async (tx) => {
      const fences = await tx.fencedCalls(batch);
      const results: WriteOutcome[] = [];
      for (const [i, w] of batch.entries()) {
        const f = fences[i]!;
        results.push(f.current ? { value: await w.fn(tx, f.call) } : { stale: true });
      }
      return results;
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
