/**
 * WebSocket transport (ws): text frames only, explicit frame limit, heartbeat with liveness timeout.
 */
import { channel } from 'node:diagnostics_channel';
import WebSocket from 'ws';
import type { CloseInfo, Transport } from './transport.js';

/**
 * Diagnostics channels (node:diagnostics_channel) for tools that time the call path (`npm run
 * bench:timeline`). Published only while someone subscribes; the message is the transport.
 * `aios:transport.received`: a text frame arrived, before it is dispatched. `aios:transport.flushing`
 * and `aios:transport.flushed`: just before and just after one turn's corked frames are written to the
 * socket (one `writev`).
 */
export const TRANSPORT_CHANNELS = {
  received: channel('aios:transport.received'),
  flushing: channel('aios:transport.flushing'),
  flushed: channel('aios:transport.flushed'),
} as const;

/** Close codes used by the protocol. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  unsupportedData: 1003,
  tooBig: 1009,
  replaced: 4001,
  revoked: 4003,
  outdated: 4004,
  /** The device went past the bridge's per-device bounds (`device_limits_exceeded`, 1.2). */
  limits: 4008,
} as const;

/** `ws.send` options for a text frame whose UTF-8 bytes are given as a Buffer. */
const TEXT_FRAME = { binary: false } as const;

/** Default frame limit (§1). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;
/** Default heartbeat (§1). */
export const DEFAULT_HEARTBEAT_MS = 20_000;

/** Wraps an open `ws` socket as a Transport; pings every `heartbeatMs` and terminates after 3 × silence. */
export class WebSocketTransport implements Transport {
  onmessage?: (text: string) => void;
  onclose?: (info: CloseInfo) => void;
  private lastSeen = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly ws: WebSocket, private readonly heartbeatMs = DEFAULT_HEARTBEAT_MS) {
    ws.on('message', (data, isBinary) => {
      this.lastSeen = Date.now();
      if (isBinary) {
        ws.close(CLOSE.unsupportedData, 'binary frames are not allowed');
        return;
      }
      if (TRANSPORT_CHANNELS.received.hasSubscribers) TRANSPORT_CHANNELS.received.publish(this);
      this.onmessage?.(data.toString());
    });
    ws.on('pong', () => (this.lastSeen = Date.now()));
    ws.on('ping', () => (this.lastSeen = Date.now()));
    ws.on('close', (code, reason) => this.finish({ code, reason: reason.toString() }));
    ws.on('error', () => {
      /* a 'close' always follows; the error itself is logged by the owner if it cares */
    });
    this.setHeartbeat(heartbeatMs);
  }

  /** Changes the heartbeat interval (the bridge announces its own in hello). */
  setHeartbeat(ms: number): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = setInterval(() => {
      if (Date.now() - this.lastSeen > 3 * ms) {
        this.ws.terminate();
        return;
      }
      if (this.ws.readyState === WebSocket.OPEN) this.ws.ping();
    }, ms);
    this.timer.unref();
  }

  get isOpen(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  send(text: string): void {
    if (!this.isOpen) throw new Error('transport closed');
    this.cork();
    this.ws.send(text);
  }

  /**
   * The parts are written into one buffer and sent as a text frame: no string of the whole message is
   * made (joined, the parts would be copied once more into it, and `ws` then copies the text again).
   */
  sendParts(parts: readonly string[]): void {
    if (!this.isOpen) throw new Error('transport closed');
    let size = 0;
    for (const p of parts) size += Buffer.byteLength(p);
    const bytes = Buffer.allocUnsafe(size);
    let at = 0;
    for (const p of parts) at += bytes.write(p, at);
    this.cork();
    this.ws.send(bytes, TEXT_FRAME);
  }

  private corked = false;

  /**
   * Frames sent in one event-loop turn (a call's state notifications and its response, or 64 answers
   * at once) leave in one socket write instead of one write each.
   */
  private cork(): void {
    if (this.corked) return;
    const socket = (this.ws as unknown as { _socket?: { cork(): void; uncork(): void; destroyed?: boolean } })._socket;
    if (!socket) return;
    this.corked = true;
    socket.cork();
    setImmediate(() => {
      this.corked = false;
      if (socket.destroyed) return;
      const { flushing, flushed } = TRANSPORT_CHANNELS;
      if (flushing.hasSubscribers) flushing.publish(this);
      socket.uncork();
      if (flushed.hasSubscribers) flushed.publish(this);
    });
  }

  close(code: number = CLOSE.normal, reason = ''): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(code, reason);
    else this.finish({ code, reason });
  }

  /** Drops the connection without a closing handshake (tests, dead peers). */
  terminate(): void {
    this.ws.terminate();
  }

  private finish(info: CloseInfo): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.onclose?.(info);
  }
}
