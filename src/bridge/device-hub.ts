/**
 * The bridge's device endpoint (PROTOCOL.md §1, §3): token check before the upgrade, hello checks,
 * one live session per device (the newer replaces the older with 4001), and the device's notifications.
 * A device is (workspace, device id): the same id in another workspace is another device, never replaced,
 * reached or disconnected through this one.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { WebSocketServer, type WebSocket } from 'ws';
import { JsonRpcPeer } from '../protocol/peer.js';
import { WebSocketTransport, CLOSE } from '../protocol/ws-transport.js';
import { WireError } from '../protocol/errors.js';
import { METHODS, SUBPROTOCOL, type HelloParams, type HelloResult } from '../protocol/messages.js';
import type { Logger } from '../base/logger.js';
import { bearer, type DeviceAuthenticator, type DeviceIdentity } from './auth.js';
import { BRIDGE_PROTOCOL_VERSIONS, isClientOutdated, negotiateProtocolVersion } from './versions.js';
import { deviceKey, type RefusedHello } from './store.js';

/** One live, established device session. */
export interface DeviceConnection {
  sessionId: string;
  identity: DeviceIdentity;
  hello: HelloParams;
  /**
   * The version negotiated in hello. On `1.0` the client sends a note for every transition; on `1.1` it
   * may send none for a fast call, and the bridge derives the missing states from the outcome (§6.2).
   */
  protocolVersion: string;
  peer: JsonRpcPeer;
  connectedAt: string;
  /** The session's epoch in the cluster (`DeviceSessions.claim`); absent on a single-process bridge. */
  epoch?: number;
}

/**
 * A clustered bridge's device sessions (cluster/sessions.ts): one live session per device across the nodes.
 * `claim` runs at hello, after its checks; the hello answers only once the claim is committed.
 */
export interface SessionClaims {
  /** Claims the device's session for this node; resolves with its epoch (newer than every earlier one). */
  claim(identity: DeviceIdentity, protocolVersion: string): Promise<number>;
  /** The connection closed before its hello could answer: give the claimed session up. */
  abandon(identity: DeviceIdentity, epoch: number): void;
}

export interface DeviceHubOptions {
  auth: DeviceAuthenticator;
  minClientVersion: string;
  heartbeatMs: number;
  leaseMs: number;
  maxMessageBytes: number;
  log: Logger;
  /**
   * Where refused hellos are kept (the bridge's store: they survive a restart, and a clustered bridge
   * shares them); in memory only when absent (unit tests).
   */
  refusals?: RefusalStore;
  /** A clustered bridge's session claims; none on a single process (the hub's own map is the whole truth). */
  sessions?: SessionClaims;
}

/** Persistence of refused hellos (BridgeStore implements it). */
export interface RefusalStore {
  refusedHello(workspaceId: string, deviceId: string): RefusedHello | undefined;
  saveRefusedHello(workspaceId: string, deviceId: string, h: RefusedHello): void;
  clearRefusedHello(workspaceId: string, deviceId: string): void;
  /** The keys (`deviceKey`) of every device with a refusal on record. */
  refusedHelloKeys(): string[];
}

/**
 * Emits 'online' (conn), 'offline' (conn), and 'notification' (conn, method, params).
 * Request handlers for device → bridge requests (call.report) are added with `onDeviceRequest`.
 */
export class DeviceHub extends EventEmitter {
  private readonly wss: WebSocketServer;
  private readonly live = new Map<string, DeviceConnection>();
  /** The last hello the bridge refused, per workspace/device, until one succeeds (kept in `o.refusals` when given). */
  private readonly refusedHellos = new Map<string, RefusedHello>();
  /** Devices with a refusal in `o.refusals`: a successful hello deletes a row only when there is one. */
  private readonly refusedKeys: Set<string>;
  private readonly deviceRequests = new Map<string, (conn: DeviceConnection, params: unknown) => unknown>();

  constructor(private readonly o: DeviceHubOptions) {
    super();
    this.refusedKeys = new Set(o.refusals?.refusedHelloKeys() ?? []);
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: o.maxMessageBytes,
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
    });
  }

  /**
   * The live connection of a device in a workspace. Without a workspace (tests, benches with one
   * workspace) the first session with that device id.
   */
  get(deviceId: string, workspaceId?: string): DeviceConnection | undefined {
    if (workspaceId !== undefined) return this.live.get(deviceKey(workspaceId, deviceId));
    for (const c of this.live.values()) if (c.identity.device_id === deviceId) return c;
    return undefined;
  }

  /** The last refused hello of a device (e.g. `client_outdated`), if its latest attempt was refused. */
  lastRefusedHello(workspaceId: string, deviceId: string): RefusedHello | undefined {
    if (this.o.refusals) return this.refusedKeys.has(deviceKey(workspaceId, deviceId)) ? this.o.refusals.refusedHello(workspaceId, deviceId) : undefined;
    return this.refusedHellos.get(deviceKey(workspaceId, deviceId));
  }

  private noteRefused(id: DeviceIdentity, h: RefusedHello | undefined): void {
    const key = deviceKey(id.workspace_id, id.device_id);
    if (!this.o.refusals) {
      if (h) this.refusedHellos.set(key, h);
      else this.refusedHellos.delete(key);
      return;
    }
    try {
      if (h) {
        this.o.refusals.saveRefusedHello(id.workspace_id, id.device_id, h);
        this.refusedKeys.add(key);
      } else if (this.refusedKeys.delete(key)) this.o.refusals.clearRefusedHello(id.workspace_id, id.device_id);
    } catch (e) {
      this.o.log.warn({ err: String(e), device_id: id.device_id }, 'could not record a refused hello');
    }
  }

  /** True when the device (in that workspace, when given) has a live session. */
  isOnline(deviceId: string, workspaceId?: string): boolean {
    return this.get(deviceId, workspaceId) !== undefined;
  }

  /** Every live session on this bridge (a snapshot). */
  connections(): DeviceConnection[] {
    return [...this.live.values()];
  }

  /**
   * Session `epoch` of the device was claimed elsewhere (or here, by a newer connection): closes this bridge's
   * older session of that device with 4001. True when one was closed.
   */
  replaced(workspaceId: string, deviceId: string, epoch: number): boolean {
    const c = this.live.get(deviceKey(workspaceId, deviceId));
    if (!c || c.epoch === undefined || c.epoch >= epoch) return false;
    this.o.log.info({ device_id: deviceId, epoch: c.epoch, by: epoch }, 'a newer session of the device replaces this one');
    c.peer.close(CLOSE.replaced, 'replaced');
    return true;
  }

  /** Adds a handler for a request a device sends after hello. */
  onDeviceRequest(method: string, fn: (conn: DeviceConnection, params: unknown) => unknown): void {
    this.deviceRequests.set(method, fn);
  }

  /** Drops the session of exactly this identity (e.g. its tokens were revoked); a same-named device of another workspace or user stays. */
  disconnect(identity: DeviceIdentity, code: number = CLOSE.revoked, reason = 'revoked'): void {
    const c = this.live.get(deviceKey(identity.workspace_id, identity.device_id));
    if (c && c.identity.user_id === identity.user_id) c.peer.close(code, reason);
  }

  /** Handles an HTTP upgrade for the device path: refuses with 401 before any socket opens if the token is bad. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const token = bearer(req.headers.authorization);
    const found = token ? this.o.auth.authenticateDevice(token) : null;
    if (found instanceof Promise) {
      // A sign-in token, checked in the login store: a store out of reach is the typed, retryable refusal.
      found.then(
        (identity) => this.upgrade(req, socket, head, identity),
        (e: unknown) => {
          this.o.log.warn({ err: String(e) }, 'could not check a device token');
          refuse(socket, 503, 'Service Unavailable', { type: 'store_unavailable', message: 'The bridge cannot reach its database; try again later.' });
        },
      );
      return;
    }
    this.upgrade(req, socket, head, found);
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, identity: DeviceIdentity | null): void {
    if (!identity) {
      refuse(socket, 401, 'Unauthorized', { type: 'unauthorized', message: 'The device token is missing, unknown, expired or revoked.' });
      return;
    }
    const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim());
    if (!offered.includes(SUBPROTOCOL)) {
      refuse(socket, 400, 'Bad Request', { type: 'unsupported_protocol_version', message: `The WebSocket subprotocol ${SUBPROTOCOL} is required.` });
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, identity));
  }

  private accept(ws: WebSocket, identity: DeviceIdentity): void {
    const transport = new WebSocketTransport(ws, this.o.heartbeatMs);
    let conn: DeviceConnection | undefined;
    /** A hello is claiming the cluster session now (a second hello meanwhile is refused like one after it). */
    let claiming = false;
    const peer = new JsonRpcPeer(transport, {
      maxMessageBytes: this.o.maxMessageBytes,
      gate: (m) => {
        if (!conn && m !== METHODS.hello && m !== METHODS.ping) throw new WireError('not_ready', 'Send aios/session.hello first.');
      },
      onError: (e, where) => this.o.log.warn({ err: String(e), where, device_id: identity.device_id }, 'device session fault'),
    });
    peer.onRequest(METHODS.ping, () => ({ time: new Date().toISOString() }));
    peer.onRequest(METHODS.hello, (params) => {
      if (conn || claiming) throw new WireError('not_ready', 'This connection already said hello.');
      const hello = params as HelloParams;
      const key = deviceKey(identity.workspace_id, identity.device_id);
      let version: string;
      try {
        version = this.checkHello(hello, identity);
      } catch (e) {
        // Kept so that a runtime (and `trial`) can tell an outdated device from one that is merely offline.
        if (e instanceof WireError) {
          this.noteRefused(identity, {
            type: e.type,
            message: e.message,
            at: new Date().toISOString(),
            client_version: String(hello.client?.version ?? ''),
            ...(e.type === 'client_outdated' ? { minimum: this.o.minClientVersion } : {}),
            protocol_version: String(hello.protocol_version ?? ''),
          });
        }
        throw e;
      }
      this.noteRefused(identity, undefined);
      const establish = (epoch?: number): HelloResult => {
        const previous = this.live.get(key);
        conn = { sessionId: 'ses_' + randomUUID(), identity, hello, protocolVersion: version, peer, connectedAt: new Date().toISOString(), ...(epoch !== undefined ? { epoch } : {}) };
        this.live.set(key, conn);
        if (previous) {
          this.o.log.info({ device_id: identity.device_id }, 'a new connection replaces the device\'s previous one');
          previous.peer.close(CLOSE.replaced, 'replaced');
        }
        const c = conn;
        setImmediate(() => this.emit('online', c));
        return {
          session_id: conn.sessionId,
          protocol_version: version,
          server_time: new Date().toISOString(),
          heartbeat_ms: this.o.heartbeatMs,
          lease_ms: this.o.leaseMs,
          min_client_version: this.o.minClientVersion,
        };
      };
      const sessions = this.o.sessions;
      if (!sessions) return establish();
      // The cluster's one live session per device: claimed (and the node holding the older one told) first.
      claiming = true;
      return sessions.claim(identity, version).finally(() => (claiming = false)).then(
        (epoch) => {
          const newer = this.live.get(key);
          if (!peer.isOpen || (newer?.epoch !== undefined && newer.epoch > epoch)) {
            sessions.abandon(identity, epoch);
            throw new WireError('not_ready', 'This connection closed or was replaced while its session was being claimed.');
          }
          return establish(epoch);
        },
        (e: unknown) => {
          this.o.log.warn({ err: String(e), device_id: identity.device_id }, 'could not claim the device\'s session');
          // The database out of reach: said as such (retryable; the device connects again with its backoff).
          if (e instanceof WireError && e.type === 'store_unavailable') throw e;
          throw new WireError('not_ready', 'The bridge could not record the session; connect again.');
        },
      );
    });
    for (const [m, fn] of this.deviceRequests) peer.onRequest(m, (p) => fn(conn!, p));
    for (const m of [METHODS.callState, METHODS.progress, METHODS.toolsChanged]) {
      peer.onNotification(m, (p) => {
        if (conn) this.emit('notification', conn, m, p);
      });
    }
    peer.onclose = () => {
      const key = deviceKey(identity.workspace_id, identity.device_id);
      if (conn && this.live.get(key) === conn) {
        this.live.delete(key);
        this.emit('offline', conn);
      }
    };
  }

  /** Checks a hello; returns the protocol version the session will speak. */
  private checkHello(h: HelloParams, id: DeviceIdentity): string {
    if (h.workspace_id !== id.workspace_id || h.user_id !== id.user_id || h.device.id !== id.device_id) {
      throw new WireError('identity_mismatch', 'The workspace, user or device in hello is not the one bound to the token.');
    }
    const version = negotiateProtocolVersion(h.protocol_version);
    if (!version) {
      throw new WireError('unsupported_protocol_version', 'The bridge does not speak this protocol version.', { details: { supported: [...BRIDGE_PROTOCOL_VERSIONS] } });
    }
    if (isClientOutdated(h.client.version, this.o.minClientVersion)) {
      throw new WireError('client_outdated', `This client is ${h.client.version}; the bridge needs ${this.o.minClientVersion} or newer.`, {
        details: { min_client_version: this.o.minClientVersion, client_version: h.client.version },
      });
    }
    return version;
  }

  /** Closes every session. */
  close(): void {
    for (const c of this.live.values()) c.peer.close(CLOSE.goingAway, 'bridge stopping');
    this.wss.close();
  }
}

export type { RefusedHello } from './store.js';

function refuse(socket: Duplex, status: number, text: string, error: { type: string; message: string }): void {
  const body = JSON.stringify({ error });
  socket.write(`HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  socket.destroy();
}
