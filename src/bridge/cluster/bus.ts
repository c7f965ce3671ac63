/**
 * The seam between the bridge nodes of a cluster (issue 34): short messages that carry ids only, addressed to
 * one node or to every node. The bodies (a call's params, its outcome, a session's owner) are always read from
 * the store; a message only says "look at this row now". Delivery is not durable: a node that was not
 * listening misses messages, so after every (re)connection the bus runs the caller's `caughtUp` hook, which
 * scans the store for what it may have missed (and the caller sweeps periodically as well).
 *
 * Implementations: PostgreSQL LISTEN/NOTIFY (`pg-bus.ts`, the clustered bridge) and one process
 * (`local-bus.ts`, over the SQLite store). A NATS bus would map onto the same interface without touching the
 * call path: `notify(node)` publishes on a per-node subject (`aios.node.<id>`; or request/reply on a
 * per-device subject `aios.device.<workspace>.<device>`, answered by the owner), `broadcast` on `aios.nodes`,
 * `caughtUp` runs on the client's reconnect status event, and a message sent "in a transaction" goes to an
 * outbox row written by that transaction and is published after the commit (NATS cannot join a database
 * transaction; the rescan covers a crash between the commit and the publish). The call path's submit sends its
 * `call` message through the store itself (`StoreOps.submitCall`, one statement on PostgreSQL): a NATS bus
 * would take it from that outbox too.
 */
import type { StoreOps } from '../store/async-store.js';

/** A node's id (config `cluster.node_id`): it names LISTEN channels, which are identifiers, not parameters. */
export const NODE_ID = /^[a-z0-9_]{1,32}$/;

/** The largest payload PostgreSQL's NOTIFY takes is 7999 bytes; messages carry ids only, far below it. */
export const MAX_PAYLOAD_BYTES = 7999;

/** What a node is told. Ids only: the node reads the rows they name. */
export type BusMessage =
  /** A call was submitted for a device whose session this node holds: read it and send it to the device. */
  | { type: 'call'; workspace_id: string; call_id: string }
  /**
   * A call's record changed (a state, a note, progress, its outcome): nodes streaming it read it again. `write`:
   * the writing node's token for this write; that node takes the record it saved instead of reading it back.
   */
  | { type: 'call_changed'; workspace_id: string; call_id: string; write?: string }
  /** A runtime asked another node to cancel a call whose device's session this node holds: ask the device to cancel it. */
  | { type: 'cancel'; workspace_id: string; call_id: string }
  /**
   * The device's session moved to a newer one (`epoch`, claimed on another node): close every older session of
   * that device here with 4001, and stop acting for them (fencing).
   */
  | { type: 'session_replaced'; workspace_id: string; device_id: string; epoch: number }
  /**
   * A signed-in device was revoked (on any node): the node holding its session closes it with 4003. Broadcast,
   * since the revoking node does not know which node holds the session; its token is refused everywhere already.
   */
  | { type: 'device_revoked'; workspace_id: string; user_id: string; device_id: string }
  /**
   * Devices of a workspace came online with their functions read, changed their functions, or went offline (on
   * the node sending it): MCP sessions that can see them are told their tool list changed. Broadcast, coalesced
   * by the sender (`DeviceChanges`); no `device_ids` means every device of the workspace.
   */
  | { type: 'devices_changed'; workspace_id: string; device_ids?: string[] };

/**
 * Why `caughtUp` runs: the first LISTEN, a LISTEN after the connection was lost (messages may be lost), or
 * the periodic sweep (a message can also be lost without a lost connection: a node busy past its handler).
 */
export type CatchUpReason = 'start' | 'reconnect' | 'sweep';

/** Receives the messages addressed to this node and the broadcasts. */
export type BusHandler = (message: BusMessage) => void;

/** The bus between the bridge nodes of one cluster. */
export interface ClusterBus {
  /** This node's id. */
  readonly nodeId: string;
  /** Starts listening; resolves once the first subscription is in place and `caughtUp('start')` has run. */
  start(): Promise<void>;
  /** Adds a handler for the messages this node receives; returns the function that removes it. */
  subscribe(handler: BusHandler): () => void;
  /**
   * Sends `message` to node `to`. With `tx` (a store transaction) it is delivered when that transaction
   * commits and never when it rolls back; without, at once.
   */
  notify(to: string, message: BusMessage, tx?: StoreOps): Promise<void>;
  /** Sends `message` to every node, this one included; `tx` as for {@link ClusterBus.notify}. */
  broadcast(message: BusMessage, tx?: StoreOps): Promise<void>;
  /** Stops listening; sending afterwards is an error. */
  close(): Promise<void>;
}

/** A node id that is not 1 to 32 of a-z, 0-9 and `_` (it would not be a safe channel name). */
export class BadNodeIdError extends Error {
  readonly code = 'bad_node_id' as const;
  constructor(readonly nodeId: string) {
    super(`"${nodeId}" is not a node id: 1 to 32 of a-z, 0-9 and _ (it names a LISTEN channel)`);
    this.name = 'BadNodeIdError';
  }
}

/** A message whose encoding is longer than NOTIFY carries (its ids are too long). */
export class BusPayloadTooLargeError extends Error {
  readonly code = 'bus_payload_too_large' as const;
  constructor(readonly bytes: number) {
    super(`a cluster bus message is ${bytes} bytes; at most ${MAX_PAYLOAD_BYTES} fit (messages carry ids only)`);
    this.name = 'BusPayloadTooLargeError';
  }
}

/** Throws {@link BadNodeIdError} unless `id` is a node id; returns it. */
export function checkNodeId(id: string): string {
  if (!NODE_ID.test(id)) throw new BadNodeIdError(id);
  return id;
}

/** What a node's channel name starts with (the store's one-statement submit names the owner's channel by it). */
export const NODE_CHANNEL_PREFIX = 'aios_node_';

/** The channel a node listens on: lower case, so `LISTEN` (which folds case) and `pg_notify` name the same one. */
export function nodeChannel(nodeId: string): string {
  return `${NODE_CHANNEL_PREFIX}${checkNodeId(nodeId)}`;
}

/** The channel every node listens on. */
export const ALL_NODES_CHANNEL = 'aios_nodes';

/** A message as text (JSON); throws {@link BusPayloadTooLargeError} when it does not fit a NOTIFY payload. */
export function encodeMessage(m: BusMessage): string {
  const text = JSON.stringify(m);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_PAYLOAD_BYTES) throw new BusPayloadTooLargeError(bytes);
  return text;
}

const isId = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

/** A message from its text, or null when the text is not one (a newer node's message, or noise on the channel). */
export function decodeMessage(text: string): BusMessage | null {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  switch (v['type']) {
    case 'call_changed':
      if (!isId(v['workspace_id']) || !isId(v['call_id'])) return null;
      return { type: 'call_changed', workspace_id: v['workspace_id'], call_id: v['call_id'], ...(isId(v['write']) ? { write: v['write'] } : {}) };
    case 'call':
    case 'cancel':
      return isId(v['workspace_id']) && isId(v['call_id']) ? { type: v['type'], workspace_id: v['workspace_id'], call_id: v['call_id'] } : null;
    case 'session_replaced':
      return isId(v['workspace_id']) && isId(v['device_id']) && Number.isSafeInteger(v['epoch'])
        ? { type: 'session_replaced', workspace_id: v['workspace_id'], device_id: v['device_id'], epoch: v['epoch'] as number }
        : null;
    case 'device_revoked':
      return isId(v['workspace_id']) && isId(v['user_id']) && isId(v['device_id'])
        ? { type: 'device_revoked', workspace_id: v['workspace_id'], user_id: v['user_id'], device_id: v['device_id'] }
        : null;
    case 'devices_changed': {
      const ids = v['device_ids'];
      if (!isId(v['workspace_id'])) return null;
      if (ids === undefined) return { type: 'devices_changed', workspace_id: v['workspace_id'] };
      return Array.isArray(ids) && ids.every(isId) ? { type: 'devices_changed', workspace_id: v['workspace_id'], device_ids: ids as string[] } : null;
    }
    default:
      return null;
  }
}
