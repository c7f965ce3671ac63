/**
 * Events consent raises (the window's prompt provider, the status board) for the local endpoint to
 * broadcast to the tray / web UI, as JSON-RPC notifications on `WS /rpc` (PROTOCOL.md §8). The event
 * name is the notification method.
 */
import { EventEmitter } from 'node:events';

/** Notification method names. */
export const CONTROL_EVENTS = {
  prompt: 'control/notification.prompt',
  promptWithdrawn: 'control/notification.prompt_withdrawn',
  status: 'control/notification.status',
  /** The user's grants changed (`{ kind }`): every open window lists them again. */
  grants: 'control/notification.grants',
} as const;

/** Emits `(params: object)` under each CONTROL_EVENTS name. */
export class ControlEvents extends EventEmitter {}
