/**
 * A cluster node's device changes for MCP (`notifications/tools/list_changed`, docs/mcp.md): a device that came
 * online with its functions read, changed them, or went offline here is a change every node's MCP sessions may
 * need to hear of, wherever the client's stream is. The changes of one window (CHANGES_WINDOW_MS) go out as one
 * `devices_changed` broadcast per workspace, so a storm of hellos costs a few NOTIFYs a second, not one each;
 * a window whose device ids do not fit a NOTIFY payload names the workspace only (every session of it re-lists).
 */
import type { Logger } from '../../base/logger.js';
import { BusPayloadTooLargeError, encodeMessage, type BusMessage } from './bus.js';

/** How long a node gathers device changes before it broadcasts them. */
export const CHANGES_WINDOW_MS = 100;

export interface DeviceChangesOptions {
  broadcast(message: BusMessage): Promise<void>;
  log: Logger;
  windowMs?: number;
}

/** Gathers a node's device changes and broadcasts them, one message per workspace per window. */
export class DeviceChanges {
  private pending = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly o: DeviceChangesOptions) {}

  /** Device `deviceId` of `workspaceId` changed (came, went, or changed its functions) on this node. */
  changed(workspaceId: string, deviceId: string): void {
    if (this.closed) return;
    let ids = this.pending.get(workspaceId);
    if (!ids) this.pending.set(workspaceId, (ids = new Set()));
    ids.add(deviceId);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.o.windowMs ?? CHANGES_WINDOW_MS);
      this.timer.unref();
    }
  }

  /** Broadcasts what the window gathered (also what a test calls to skip the wait). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const all = this.pending;
    this.pending = new Map();
    for (const [workspace_id, ids] of all) {
      const message = fitting({ type: 'devices_changed', workspace_id, device_ids: [...ids] });
      this.o.broadcast(message).catch((e: unknown) => this.o.log.warn({ err: String(e), workspace_id }, 'could not tell the other nodes that devices changed'));
    }
  }

  /** Stops: what is pending is dropped (the node is going away; its devices' sessions end anyway). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.pending.clear();
  }
}

/** The message itself, or the workspace alone when its device ids make it too long for a NOTIFY. */
function fitting(m: Extract<BusMessage, { type: 'devices_changed' }>): BusMessage {
  try {
    encodeMessage(m);
    return m;
  } catch (e) {
    if (!(e instanceof BusPayloadTooLargeError)) throw e;
    return { type: 'devices_changed', workspace_id: m.workspace_id };
  }
}
