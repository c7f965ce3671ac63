/**
 * The bridge's store as one asynchronous interface with two implementations, chosen by config (`store.kind`):
 * SQLite (`sqlite-store.ts`, the embedded default, over today's synchronous `BridgeStore`) and PostgreSQL
 * (`pg-store.ts`, the clustered mode's shared engine, issue 34). Both pass one test suite
 * (test/bridge/store-suite.ts). The single process's call path (`calls.ts`) uses `BridgeStore` directly; a
 * cluster node's (`cluster/cluster-calls.ts`) uses this interface (docs/deploy.md, "Clustered bridge").
 */
import type { DeviceRecord, DeviceUpdate, RefusedHello, StoredCall } from '../store.js';

/** What the call path reads and writes: calls, refused hellos, devices and their Adapter Cards. */
export interface StoreOps {
  /**
   * Inserts a new call. Idempotency is the store's unique key `(workspace_id, call_id)`, never process
   * memory: resolves `false` (and changes nothing) when a call with that key exists already; the caller
   * then reads it with `getCall` and compares `args_digest`.
   */
  insertCall(c: StoredCall): Promise<boolean>;
  /**
   * A runtime's submit (issue 34): inserts the call for the device's live session and tells the node holding
   * it (`payload`, an encoded `call` bus message, on that node's channel, delivered on the commit), with the
   * session row held until then (as `session(…, true)` holds it), so the node told owns the session. One
   * statement on PostgreSQL. `offline`: the device has no session, or its lease lapsed (nothing inserted);
   * `exists`: a call with this key exists already (nothing changed, nobody told).
   */
  submitCall(c: StoredCall, payload: string): Promise<'sent' | 'offline' | 'exists'>;
  /**
   * `forUpdate`: in a transaction, the row is held until the commit (PostgreSQL's `FOR UPDATE`), so two nodes'
   * read-change-save of one call never lose one another's change (SQLite's one connection holds it anyway).
   */
  getCall(workspaceId: string, callId: string, forUpdate?: boolean): Promise<StoredCall | undefined>;
  /**
   * The records of several calls in one read (a turn's reads on one node), one answer per key in the order
   * given (undefined: no such call). Not held: a plain read, as `getCall` without `forUpdate`.
   */
  getCalls(keys: readonly CallKey[]): Promise<(StoredCall | undefined)[]>;
  /**
   * Open calls whose deadline passed more than `graceMs` ago, at most `limit`, oldest deadline first. In a
   * transaction on PostgreSQL each row is held until the commit and rows another transaction holds are
   * skipped (`FOR UPDATE SKIP LOCKED`): two nodes sweeping at once never take the same call.
   */
  claimExpiredCalls(graceMs: number, limit: number): Promise<StoredCall[]>;
  /** Calls not yet terminal (for one device, or all). */
  openCalls(deviceId?: string): Promise<StoredCall[]>;
  /** A call by its session's workspace and device and its id (call.report carries only the call id). */
  findByDevice(workspaceId: string, deviceId: string, callId: string): Promise<StoredCall | undefined>;
  /** The calls the bridge ended `unknown` on this device since `sinceIso`, not yet resolved (§6.8). */
  unresolvedUnknowns(workspaceId: string, deviceId: string, sinceIso: string): Promise<StoredCall[]>;
  /** Writes a call's changing fields (state, outcome, timeline, …) over its record. */
  saveCall(c: StoredCall): Promise<void>;
  /** Saves several calls in one transaction. */
  saveCalls(calls: Iterable<StoredCall>): Promise<void>;
  /**
   * Removes at most `limit` ended calls last changed before `beforeIso` (the retention sweep, `call_retention_s`);
   * returns how many. Never an open call. On PostgreSQL rows another node is removing are skipped.
   */
  pruneEndedCalls(beforeIso: string, limit: number): Promise<number>;

  /** The last refused hello of a device, if its latest attempt was refused. */
  refusedHello(workspaceId: string, deviceId: string): Promise<RefusedHello | undefined>;
  /** Records a refused hello (replacing the device's previous one). */
  saveRefusedHello(workspaceId: string, deviceId: string, h: RefusedHello): Promise<void>;
  /** Forgets a device's refused hello (its hello just succeeded). */
  clearRefusedHello(workspaceId: string, deviceId: string): Promise<void>;
  /** The `deviceKey` of every device with a refused hello on record. */
  refusedHelloKeys(): Promise<string[]>;

  /**
   * Creates the device or changes only the fields given; `replace: false` leaves a known device as it is.
   * Visible to every later read of this store; durable by then (SQLite may batch device writes of one turn).
   */
  upsertDevice(d: DeviceUpdate, replace?: boolean): Promise<void>;
  getDevice(workspaceId: string, deviceId: string): Promise<DeviceRecord | undefined>;
  /**
   * What a call's submit needs of its device, without reading its whole record (issue 34: parsing every
   * descriptor per call was the clustered call's largest cost): its user, and the default timeout of function
   * `fn` when the device publishes one. Undefined when there is no such device.
   */
  callTarget(workspaceId: string, deviceId: string, fn: string): Promise<CallTarget | undefined>;
  /** The device's stored Adapter Card (not kept in memory). */
  adapterCard(workspaceId: string, deviceId: string): Promise<Record<string, unknown> | null>;
  /** A workspace's devices, by device id. */
  devices(workspaceId: string): Promise<DeviceRecord[]>;

  /**
   * Sends `payload` on the cluster bus's `channel` (`cluster/bus.ts` names channels and encodes payloads). In a
   * transaction it is delivered when the transaction commits, never when it rolls back; outside one, at once.
   * PostgreSQL: `pg_notify` (identical notifications of one transaction fold into one). SQLite: to this
   * process's listeners (`SqliteBridgeStore.listen`), since one process is the whole cluster.
   */
  notify(channel: string, payload: string): Promise<void>;

  /**
   * Claims the device's one live session for `nodeId` at hello, with a lease of `leaseMs`: the newest claim
   * wins, always (the device chose to connect again). Returns the new epoch, larger than every earlier one of
   * this device, and the session it replaced, whose owner must close it (4001) and stop acting for it.
   */
  claimSession(workspaceId: string, deviceId: string, nodeId: string, leaseMs: number, protocolVersion?: string): Promise<SessionClaim>;
  /**
   * True while `epoch` is the device's session (no newer claim replaced it). In a transaction the session row
   * is held (`FOR SHARE`) until the commit, so a claim cannot slip in between this check and the write it
   * guards: a late answer from a replaced session is refused, never saved.
   */
  isCurrent(workspaceId: string, deviceId: string, epoch: number): Promise<boolean>;
  /**
   * The device's session (a lapsed one included); none when it never claimed one or released it. With `hold`,
   * in a transaction, the session row is held until the commit (`FOR SHARE`, as `isCurrent` holds it): a claim
   * made meanwhile waits, so the session read stays the device's until then.
   */
  session(workspaceId: string, deviceId: string, hold?: boolean): Promise<DeviceSession | undefined>;
  /**
   * The fence and the call's lock for each call of a batch, in one read (the owner's writes of one turn,
   * committed together): whether each item's `epoch` is still its device's session, and the call's record. One
   * answer per item, in the order given. In a transaction the rows are held until the commit, the session row
   * as `isCurrent` holds it and the call as `getCall(…, true)` does. The rows are locked in the order of the calls' keys (workspace, call
   * id), whatever the order given, so two batches touching the same calls never wait on each other in a
   * circle. On PostgreSQL one query. One call at most once per batch.
   */
  fencedCalls(items: readonly FencedCallKey[]): Promise<FencedCall[]>;
  /**
   * Marks each call of a batch sent to its device by session `epoch` (the sends of one turn), in one statement
   * on PostgreSQL, each item fenced on its own (its session row held while the flag is written): `refused` when
   * a newer session replaced the item's `epoch` (nothing written for it), `unchanged` when the call is gone or
   * marked already (a call twice in one batch: one of them). One answer per item, in the order given. The
   * calls' rows are locked in the order of their keys (as `fencedCalls` locks them). Outside a transaction
   * PostgreSQL commits it without waiting for its WAL flush (it runs beside the invokes, which a crash between
   * the two outruns anyway); later commits wait as before.
   */
  markSent(items: readonly FencedCallKey[]): Promise<SentMark[]>;
  /** Renews the lease of every session `nodeId` holds (its heartbeat); returns how many. */
  renewLeases(nodeId: string, leaseMs: number): Promise<number>;
  /**
   * Ends the session `epoch` (its socket closed): the device is on no node until it claims again. False when a
   * newer session replaced it (that one stays). Epochs keep growing after a release.
   */
  releaseSession(workspaceId: string, deviceId: string, epoch: number): Promise<boolean>;
  /** The sessions whose lease has lapsed: their node stopped renewing them (it died, or lost the store). */
  lapsedSessions(): Promise<DeviceSession[]>;
  /** The sessions node `nodeId` holds (a lapsed one included), in one read: its catch-up scan checks its sockets against them. */
  nodeSessions(nodeId: string): Promise<DeviceSession[]>;
  /** The calls not yet terminal of every device whose session node `nodeId` holds, in one read. */
  openCallsOfNode(nodeId: string): Promise<StoredCall[]>;
}

/** One call of {@link StoreOps.fencedCalls}: the call, its device and the session epoch that writes it. */
export interface FencedCallKey extends CallKey {
  device_id: string;
  epoch: number;
}

/** A call's key: its workspace and its id. */
export interface CallKey {
  workspace_id: string;
  call_id: string;
}

/** What {@link StoreOps.markSent} did for one call. */
export type SentMark = 'written' | 'unchanged' | 'refused';

/** What {@link StoreOps.fencedCalls} gives for one call: whether the session is current, and the call (none: no such call). */
export interface FencedCall {
  current: boolean;
  call?: StoredCall;
}

/** What a call's submit reads of its device (`StoreOps.callTarget`). */
export interface CallTarget {
  user_id: string;
  /** The function's `timeout_ms_default`, when the device publishes the function with one. */
  timeout_ms_default?: number;
}

/**
 * A device's session in the cluster: the node holding its WebSocket, the epoch of its claim, and until when
 * that node's lease runs. Times are the store's clock (PostgreSQL's `now()`), never a node's.
 */
export interface DeviceSession {
  workspace_id: string;
  device_id: string;
  node_id: string;
  epoch: number;
  /** ISO-8601 UTC time the lease lapses unless its node renews it. */
  lease_until: string;
  /** The lease has lapsed. */
  lapsed: boolean;
  /** The protocol version the session's hello agreed (so every node can show it), if the claim gave one. */
  protocol_version: string | null;
}

/** What {@link StoreOps.claimSession} gives back. */
export interface SessionClaim {
  epoch: number;
  /** The session this claim replaced (null: the device had none on record). */
  previous: { node_id: string; epoch: number; lapsed: boolean } | null;
}

/**
 * What joining the cluster gave: joined (with the row's `started_at`, which fences this process's heartbeats);
 * refused because live nodes have another shared config (`differing`); or refused because a live node already
 * has this node id (`taken`: another process, or this node's previous process whose heartbeats have not lapsed).
 */
export type JoinResult =
  | { joined: true; started_at: string }
  | { joined: false; differing: ClusterNodeRecord[]; taken?: undefined }
  | { joined: false; taken: ClusterNodeRecord; differing?: undefined };

/** A heartbeat's result ({@link AsyncBridgeStore.nodeHeartbeat}). */
export type HeartbeatResult = 'ok' | 'gone' | 'taken';

/** The store: its operations, transactions over them, and closing. */
export interface AsyncBridgeStore extends StoreOps {
  /** Which engine this is. */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Runs `fn` in one transaction: its writes through `tx` commit together, or none does when it throws.
   * Operations on the store itself (not `tx`) are outside the transaction and do not see its writes before
   * the commit.
   */
  transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T>;
  close(): Promise<void>;

  /**
   * Records node `nodeId` as a member with its shared config's digests, unless a live node (seen within
   * `liveMs`; this node's own earlier row aside) has another `digest`: then nothing is written and the
   * differing nodes are returned. Nodes joining at once take turns, so two different configs cannot both join.
   */
  joinCluster(nodeId: string, config: NodeConfigDigest, liveMs: number): Promise<JoinResult>;
  /**
   * Renews the node's `last_seen` (its heartbeat) if its row is still the one this process wrote when it
   * joined (`startedAt`, from {@link JoinResult}): `ok`; `gone` when the row is gone; `taken` when another
   * process has joined under the same node id since (this one must stop acting as that node).
   */
  nodeHeartbeat(nodeId: string, startedAt: string): Promise<HeartbeatResult>;
  /** Every node on record, by node id. */
  clusterNodes(): Promise<ClusterNodeRecord[]>;
  /** Removes the node's row (a clean stop), if it is still the one this process wrote (`startedAt`). */
  leaveCluster(nodeId: string, startedAt: string): Promise<void>;
}

/** The digest of a node's shared config, and of each of its keys (`cluster/config-digest.ts`). */
export interface NodeConfigDigest {
  digest: string;
  keys: Record<string, string>;
}

/** A node of the cluster as recorded. */
export interface ClusterNodeRecord {
  node_id: string;
  config: NodeConfigDigest;
  started_at: string;
  last_seen: string;
}
