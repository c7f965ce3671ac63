/**
 * A bridge process in the clustered mode (`store.kind: postgres`, issue 34): it opens and migrates the
 * PostgreSQL store, joins the cluster (refusing when its shared config differs from the live nodes'), renews
 * its heartbeat and its sessions' leases, listens on the cluster bus, and serves device WebSockets (one live
 * session per device across the cluster, claimed at hello: `sessions.ts`) and the runtime calls API
 * (`cluster-calls.ts`), the device list, skills and device sign-in (its state in PostgreSQL: any node serves any
 * step), the MCP endpoints (sessions and their events in PostgreSQL: any node continues any session), the QA
 * console (a static page over the runtime API), and blobs (files in `blobs.dir`, a folder every node mounts, with
 * their records and the quota in PostgreSQL: `pg-blob-ledger.ts`). Without `blobs.dir` the blob routes answer 503
 * `cluster_not_wired`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../base/logger.js';
import { sendJson } from '../../base/http-body.js';
import { storeUrl, type BridgeConfig } from '../../config/bridge-config.js';
import { METHODS } from '../../protocol/messages.js';
import { CLOSE } from '../../protocol/ws-transport.js';
import { APP_VERSION } from '../../version.js';
import { DeviceHub, type DeviceConnection, type RefusalStore } from '../device-hub.js';
import { FunctionListReader, limitsCloseReason } from '../device-limits.js';
import { RuntimeApi } from '../http-api.js';
import { sendError, STORE_RETRY_AFTER_S, StreamLimiter, type RateLimit } from '../http-util.js';
import { ClusterNotWiredError, ConfigTokens } from '../server.js';
import { helloUpdate } from '../store.js';
import { PgBridgeStore } from '../store/pg-store.js';
import { BlobStore, blobMount } from '../blob-store.js';
import { PgRateLimits } from '../store/pg-rate-limits.js';
import { PgLoginStore } from '../store/pg-login-store.js';
import { OAuthService } from '../oauth/oauth-routes.js';
import { checkAdapterCard } from '../card-check.js';
import { serveConsole } from '../console-routes.js';
import { signInDisabledMount } from '../sign-in-disabled.js';
import { firstIdentity, type DeviceAuthenticator } from '../auth.js';
import { WireError } from '../../protocol/errors.js';
import { ClusterCallRouter } from './cluster-calls.js';
import { PgBlobLedger, type PgBlobLedgerOptions } from './pg-blob-ledger.js';
import { configDigest } from './config-digest.js';
import { ClusterNode } from './node.js';
import { CallRetention } from '../retention.js';
import { PgClusterBus, type PgBusOptions } from './pg-bus.js';
import { DeviceChanges } from './device-changes.js';
import { DeviceSessions } from './sessions.js';
import { bridgeIdleCollector } from '../../base/idle-gc.js';
import { McpEndpoint, hostsFor } from '../mcp/endpoint.js';
import { PgMcpSessions } from '../store/pg-mcp-sessions.js';
import { localeFromEnv } from '../../i18n/index.js';

/** How often a node deletes expired MCP sessions and events (every node sweeps; a sweep is two DELETEs). */
const MCP_SWEEP_MS = 60_000;

/** Options of {@link ClusterNodeServer}. */
export interface ClusterNodeServerOptions {
  log: Logger;
  /** The node's heartbeat and liveness window (defaults: `NODE_HEARTBEAT_MS`, `NODE_LIVE_MS`). */
  heartbeatMs?: number;
  liveMs?: number;
  /**
   * The node stopped by itself: another process joined under its node id (`ClusterNodeIdTakenError`). The
   * node has stopped serving and left nothing of the other's; the CLI exits with an error.
   */
  onStopped?(e: Error): void;
  /** The bus's reconnection and sweep timings (tests shorten or lengthen them). */
  bus?: Pick<PgBusOptions, 'backoffMs' | 'maxBackoffMs' | 'sweepMs' | 'probeMs'>;
  /** The §6.8 resolution window in ms (default 24 h). */
  resolveWindowMs?: number;
  /** The deadline sweeper's period and grace (`ClusterCallRouterOptions`; tests shorten them). */
  deadlineSweepMs?: number;
  deadlineGraceMs?: number;
  /** The blob ledger's reservation step and lease (tests shorten them). */
  blobLedger?: Pick<PgBlobLedgerOptions, 'reserveEvery' | 'leaseMs'>;
  /** How often ended calls past `call_retention_s` are removed (default 1 h; 0: only on `retention.sweep()`). */
  retentionSweepMs?: number;
}

/** A cluster node's process: membership, heartbeat, bus, `/health`, device sessions and the calls API. */
export class ClusterNodeServer {
  readonly nodeId: string;
  private store: PgBridgeStore | undefined;
  private bus: PgClusterBus | undefined;
  private node: ClusterNode | undefined;
  private hub: DeviceHub | undefined;
  private sessions: DeviceSessions | undefined;
  /** The node's call path (after `start`). */
  router: ClusterCallRouter | undefined;
  private api: RuntimeApi | undefined;
  private functionLists: FunctionListReader | undefined;
  /** The node's blobs (after `start`, when `blobs.dir` is set). */
  blobs: BlobStore | undefined;
  private blobRoutes: ((req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>) | undefined;
  private stopSweeping: (() => void) | undefined;
  /** Removes ended calls past `call_retention_s` (after `start`); every node sweeps. */
  retention: CallRetention | undefined;
  /** Device sign-in (when the config has `users`), its state in PostgreSQL: any node serves any step. */
  oauth: OAuthService | undefined;
  /**
   * Gives back, once the bridge is idle for a few seconds, the young generation that a burst of hellos or calls
   * grew (V8 keeps it at its largest while nothing allocates): the agent's rest collection, src/base/idle-gc.ts;
   * and after a storm of hellos, the old generation's pages the storm's garbage left half empty (compaction).
   */
  private readonly idle = bridgeIdleCollector((fields, msg) => this.o.log.info(fields, msg));
  /** The MCP endpoints (docs/mcp.md "On a cluster"): sessions and their events in PostgreSQL. */
  mcp: McpEndpoint | undefined;
  /** The shared MCP session store (after `start`). */
  mcpSessions: PgMcpSessions | undefined;
  private mcpSweep: NodeJS.Timeout | undefined;
  /** The device changes this node broadcasts for MCP sessions (after `start`). */
  private changes: DeviceChanges | undefined;
  private readonly http: Server;
  private url = '';

  constructor(readonly config: BridgeConfig, private readonly o: ClusterNodeServerOptions) {
    if (config.store.kind !== 'postgres' || !config.cluster) throw new Error('a cluster node needs "store.kind: postgres" and "cluster.node_id"');
    this.nodeId = config.cluster.node_id;
    this.http = createServer((req, res) => {
      this.idle.touch();
      void this.serve(req, res);
    });
    this.http.on('upgrade', (req, socket, head) => {
      const path = new URL(req.url ?? '/', 'http://node').pathname;
      if (path === '/v1/device' && this.hub) this.hub.handleUpgrade(req, socket, head);
      else socket.destroy();
    });
  }

  /** How many nodes the cluster has on record (after `start`). */
  async nodeCount(): Promise<number> {
    return (await this.store?.clusterNodes())?.length ?? 0;
  }

  /**
   * Opens the store, joins the cluster (throws `ClusterConfigMismatchError` on a config mismatch, having
   * written nothing), starts the heartbeat and the bus, and listens. Resolves with the node's URL. A failed
   * start closes what it opened.
   */
  async start(): Promise<string> {
    const s = this.config.store;
    if (s.kind !== 'postgres') throw new Error('unreachable');
    const url = storeUrl(s);
    try {
      this.store = await PgBridgeStore.open(url, { onIdleError: (e) => this.o.log.warn({ err: e.message }, 'a PostgreSQL connection of the store failed; the pool replaces it') });
      this.node = new ClusterNode({
        store: this.store,
        nodeId: this.nodeId,
        config: configDigest(this.config),
        log: this.o.log,
        ...(this.o.heartbeatMs !== undefined ? { heartbeatMs: this.o.heartbeatMs } : {}),
        ...(this.o.liveMs !== undefined ? { liveMs: this.o.liveMs } : {}),
        // Two processes must not act as one node: the one whose id was taken stops.
        onIdTaken: (e) => void this.stop().finally(() => this.o.onStopped?.(e)),
      });
      await this.node.join();
      const store = this.store;
      const log = this.o.log;
      // The cluster's shared rate limits (one budget per key across every node).
      const limits = new PgRateLimits(store.pool);
      // Every configured device has a record (a known one keeps it), as on the single process.
      await store.transaction(async (tx) => {
        for (const id of Object.values(this.config.device_tokens)) await tx.upsertDevice({ ...id }, false);
      });
      this.bus = new PgClusterBus({ url, nodeId: this.nodeId, store, log, caughtUp: (r) => this.router?.catchUp(r), ...this.o.bus });
      // MCP sessions on every node hear of a device that came, changed its functions or went (docs/mcp.md).
      const bus = this.bus;
      const changes = (this.changes = new DeviceChanges({ broadcast: (m) => bus.broadcast(m), log }));
      bus.subscribe((m) => {
        if (m.type === 'devices_changed') this.mcp?.notifyChanged(m.workspace_id, m.device_ids);
      });
      const sessions = (this.sessions = new DeviceSessions({ store, bus, leaseMs: this.node.liveMs, onReleased: (ws, dev) => changes.changed(ws, dev) }));
      const tokens = new ConfigTokens(this.config);
      const users = this.config.users;
      if (users?.length) {
        const login = new PgLoginStore(store.pool);
        // Every node writes the same users (the config digest makes them equal), one after another.
        await login.syncUsers(users);
        const c = this.config;
        this.oauth = new OAuthService({
          db: login,
          users,
          public_url: () => c.public_url ?? this.url,
          reserved_device_ids: Object.values(c.device_tokens).map((d) => d.device_id),
          // Online on any node: the device list on the approval page reads the cluster's sessions.
          is_online: async (d) => {
            const s = await store.session(d.workspace_id, d.device_id);
            return s !== undefined && !s.lapsed;
          },
          // The sign-in routes' failure counters are the cluster's, as the runtime API's bucket is.
          attempts: (name, max, windowMs) => limits.attempts(name, max, windowMs),
          ...(c.access_token_ttl_s ? { access_token_ttl_s: c.access_token_ttl_s } : {}),
          ...(c.refresh_token_ttl_s ? { refresh_token_ttl_s: c.refresh_token_ttl_s } : {}),
          ...(c.device_code_ttl_s !== undefined ? { device_code_ttl_s: c.device_code_ttl_s } : {}),
          ...(c.device_poll_interval_s !== undefined ? { device_poll_interval_s: c.device_poll_interval_s } : {}),
        });
      }
      const oauth = this.oauth;
      const deviceAuths = oauth ? [tokens, oauth] : [tokens];
      this.hub = new DeviceHub({
        auth: { authenticateDevice: (t) => firstIdentity(deviceAuths, t) },
        minClientVersion: this.config.min_client_version,
        heartbeatMs: this.config.heartbeat_ms,
        leaseMs: this.config.lease_ms,
        maxMessageBytes: this.config.max_message_bytes,
        log,
        refusals: pgRefusals(store, log),
        sessions: {
          claim: (id, version) => sessions.claim(id.workspace_id, id.device_id, version),
          abandon: (id, epoch) => void sessions.release(id.workspace_id, id.device_id, epoch).catch(() => undefined),
        },
      });
      this.router = new ClusterCallRouter({ store, bus: this.bus, hub: this.hub, sessions, log, ...(this.o.resolveWindowMs !== undefined ? { resolveWindowMs: this.o.resolveWindowMs } : {}),
        ...(this.o.deadlineSweepMs !== undefined ? { deadlineSweepMs: this.o.deadlineSweepMs } : {}),
        ...(this.o.deadlineGraceMs !== undefined ? { deadlineGraceMs: this.o.deadlineGraceMs } : {}),
      });
      this.functionLists = new FunctionListReader({
        limits: this.config.device_limits,
        log,
        save: (c, functions, revision) =>
          void store.upsertDevice({ ...c.identity, functions, functions_revision: revision }).then(
            () => changes.changed(c.identity.workspace_id, c.identity.device_id),
            (e: Error) => log.warn({ err: e.message }, 'could not save a device\'s functions'),
          ),
        exceeded: (c, bound, message) => {
          void store.upsertDevice({ ...c.identity, last_closed: { at: new Date().toISOString(), type: 'device_limits_exceeded', message } }).catch(() => undefined);
          c.peer.close(CLOSE.limits, limitsCloseReason(bound));
        },
      });
      this.hub.on('online', (c: DeviceConnection) => void this.onOnline(c).catch((e: Error) => log.warn({ err: e.message, device_id: c.identity.device_id }, 'could not record a device that came online')));
      if (oauth) {
        const hub = this.hub;
        // A revocation closes the device's session wherever it is: here at once, on the other nodes by the bus
        // (its token is refused on every node already, so a session missed here ends at its next connect).
        oauth.onRevoked((identity) => {
          hub.disconnect(identity);
          void bus.broadcast({ type: 'device_revoked', ...identity }).catch((e: Error) => log.warn({ err: e.message, device_id: identity.device_id }, 'could not tell the other nodes of a revoked device'));
        });
        bus.subscribe((m) => {
          if (m.type === 'device_revoked') hub.disconnect({ workspace_id: m.workspace_id, user_id: m.user_id, device_id: m.device_id });
        });
        this.hub.on('online', (c: DeviceConnection) => void oauth.noteClientVersion(c.identity.device_id, c.hello.client.version).catch(() => undefined));
      }
      // Memory back at rest: the young generation a hello storm grew (src/base/idle-gc.ts).
      this.hub.on('online', () => this.idle.touch());
      this.hub.on('offline', () => this.idle.touch());
      this.hub.on('offline', (c: DeviceConnection) => void store.upsertDevice({ ...c.identity, last_seen: new Date().toISOString() }).catch(() => undefined));
      this.hub.on('notification', (c: DeviceConnection, method: string) => {
        if (method === METHODS.toolsChanged) this.functionLists?.toolsChanged(c);
      });
      const hub = this.hub;
      // One bucket per token for the whole cluster, in PostgreSQL (docs/deploy.md, "Rate limits"), shared by the
      // runtime API, MCP and blob uploads (a device token uploads too), as in the single process.
      const limiter = limits.buckets('runtime', this.config.runtime_rate_limit.per_second, this.config.runtime_rate_limit.burst);
      // Open streams and MCP sessions share the token's runtime_stream_limit on each node, as on the single process.
      const streams = new StreamLimiter(this.config.runtime_stream_limit);
      const mcpSessions = (this.mcpSessions = new PgMcpSessions(store.pool));
      let hosts: { url: string; set: ReadonlySet<string> } | undefined;
      this.mcp = new McpEndpoint({
        directory: {
          getDevice: (ws, id) => store.getDevice(ws, id),
          devices: (ws) => store.devices(ws),
          // Online on any node: the device's session row.
          isOnline: async (ws, id) => {
            const s = await store.session(ws, id);
            return s !== undefined && !s.lapsed;
          },
          mcpHandles: (ws, assign) => mcpSessions.mcpHandles(ws, assign),
        },
        router: this.router,
        auth: tokens,
        limiter,
        streams,
        sessions: mcpSessions,
        maxBodyBytes: this.config.max_message_bytes,
        config: this.config.mcp ?? {},
        allowedHosts: () => {
          if (hosts?.url !== this.url) hosts = { url: this.url, set: hostsFor(this.url, this.config.public_url) };
          return hosts.set;
        },
        log,
        locale: localeFromEnv(),
      });
      const resumeTtlS = this.config.mcp?.resume_ttl_s ?? 600;
      this.mcpSweep = setInterval(() => void mcpSessions.sweep(resumeTtlS).catch((e: Error) => log.warn({ err: e.message }, 'the MCP session sweep failed; the next one tries again')), MCP_SWEEP_MS);
      this.mcpSweep.unref();
      this.api = new RuntimeApi({
        router: this.router,
        devices: {
          devices: (ws) => store.devices(ws),
          getDevice: (ws, id) => store.getDevice(ws, id),
          adapterCard: (ws, id) => store.adapterCard(ws, id),
          lastRefusedHello: (ws, id) => store.refusedHello(ws, id),
          // Any node's session; its protocol version is known only on the node holding it.
          session: async (ws, id) => {
            const s = await store.session(ws, id);
            return s && !s.lapsed ? { protocolVersion: s.protocol_version ?? hub.get(id, ws)?.protocolVersion ?? null } : undefined;
          },
          online: async (ws) => new Set(await store.liveDevices(ws)),
        },
        auth: tokens,
        limiter,
        streams,
        maxBodyBytes: this.config.max_message_bytes,
        publicUrl: () => this.config.public_url ?? this.url,
        minClientVersion: this.config.min_client_version,
        // A signed-in device's card against the key pinned at its sign-in (in PostgreSQL): as the single process.
        ...(oauth ? { cardCheck: (d, card) => checkAdapterCard(d, card, (i) => oauth.devicePublicJwk(i), log) } : {}),
      });
      this.startBlobs(store, tokens, deviceAuths, limiter);
      await this.bus.start();
      this.node.startHeartbeat();
      this.retention = new CallRetention({ prune: (before, limit) => store.pruneEndedCalls(before, limit), retentionS: this.config.call_retention_s, log: this.o.log, ...(this.o.retentionSweepMs !== undefined ? { everyMs: this.o.retentionSweepMs } : {}) });
      const { host, port } = this.config.listen;
      await new Promise<void>((resolve, reject) => {
        this.http.once('error', reject);
        this.http.listen(port, host, () => resolve());
      });
    } catch (e) {
      await this.stop();
      throw e;
    }
    const a = this.http.address() as AddressInfo;
    this.url = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
    this.o.log.info({ url: this.url, node_id: this.nodeId }, this.blobs ? 'cluster node up: it serves devices, the calls API, the device list, sign-in, MCP, the console and blobs' : 'cluster node up: it serves devices, the calls API, the device list, sign-in, MCP and the console; blobs are not served without blobs.dir (cluster_not_wired)');
    this.idle.touch();
    return this.url;
  }

  /** Stops listening, leaves the cluster (removing its row) and closes the bus and the store. */
  async stop(): Promise<void> {
    // The devices here are on no node once this one stops (they reconnect through the load balancer): a call
    // for one meanwhile answers device_offline instead of waiting on a node that is gone.
    await Promise.all((this.hub?.connections() ?? []).map((c) => (c.epoch === undefined ? undefined : this.sessions?.release(c.identity.workspace_id, c.identity.device_id, c.epoch).catch(() => false))));
    // Nothing may touch the store once it closes: stop hearing the sessions first.
    this.hub?.removeAllListeners();
    this.stopSweeping?.();
    this.blobs?.ledger.close?.();
    this.retention?.stop();
    clearInterval(this.mcpSweep);
    this.changes?.close();
    await this.mcp?.close();
    this.idle.stop();
    this.router?.close();
    this.hub?.close();
    if (this.http.listening) {
      this.http.closeAllConnections();
      await new Promise<void>((r) => this.http.close(() => r()));
    }
    await this.bus?.close();
    await this.node?.leave().catch((e: Error) => this.o.log.warn({ err: e.message }, 'could not remove this node from cluster_nodes'));
    await this.store?.close();
    this.bus = this.node = this.store = this.hub = this.sessions = this.router = this.api = this.retention = this.oauth = this.blobs = this.blobRoutes = this.stopSweeping = this.mcp = this.mcpSessions = this.changes = undefined;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://node');
    } catch {
      return sendError(res, 400, 'bad_request', 'Bad request URL.');
    }
    if (url.pathname === '/health' && req.method === 'GET') {
      try {
        const health = await this.node!.health();
        return sendJson(res, 200, { status: 'ok', version: APP_VERSION, bus: this.bus?.state, ...health });
      } catch (e) {
        this.o.log.warn({ err: (e as Error).message }, 'GET /health could not read the cluster\'s nodes');
        return sendJson(res, 503, { status: 'store_unavailable', version: APP_VERSION, node_id: this.nodeId, bus: this.bus?.state }, { 'Retry-After': String(STORE_RETRY_AFTER_S) });
      }
    }
    try {
      if (await serveConsole(req, res, url)) return;
      if (this.mcp && (await this.mcp.handle(req, res, url))) return;
      if (this.api && (await this.api.handle(req, res, url))) return;
      if (this.blobRoutes && (await this.blobRoutes(req, res, url))) return;
      if (this.oauth) {
        if (await this.oauth.handleHttp(req, res, url)) return;
      } else if (await signInDisabledMount(req, res, url)) return;
      else if (url.pathname.startsWith('/v1/oauth/')) return sendError(res, 404, 'not_found', 'No such route.');
    } catch (e) {
      if (e instanceof WireError && e.type === 'store_unavailable' && !res.headersSent) {
        // The sign-in routes with PostgreSQL out of reach: the typed 503 of every route, never a 500.
        return sendError(res, 503, e.type, e.message, undefined, { 'Retry-After': String(STORE_RETRY_AFTER_S) });
      }
      this.o.log.error({ err: String(e), path: url.pathname }, 'request failed');
      if (!res.headersSent) sendError(res, 500, 'execution_failed', 'The bridge failed to serve the request.');
      else res.end();
      return;
    }
    req.resume();
    sendError(res, 503, 'cluster_not_wired', new ClusterNotWiredError(this.nodeId).message);
  }

  /**
   * Blobs in `blobs.dir` (a folder every node mounts), their records and each workspace's quota in PostgreSQL.
   * Without `blobs.dir` a node has no folder it knows the others share: blobs answer `cluster_not_wired`.
   */
  private startBlobs(store: PgBridgeStore, tokens: ConfigTokens, deviceAuths: readonly DeviceAuthenticator[], limiter: RateLimit): void {
    const b = this.config.blobs;
    if (!b?.dir) {
      this.o.log.warn({ node_id: this.nodeId }, 'blobs.dir is not set: blobs need a folder every node mounts, and answer cluster_not_wired until then');
      return;
    }
    this.blobs = new BlobStore({
      dir: b.dir,
      ledger: new PgBlobLedger({ pool: store.pool, nodeId: this.nodeId, ...this.o.blobLedger }),
      ...(b.max_bytes ? { maxBytes: b.max_bytes } : {}),
      ...(b.ttl_s ? { ttlMs: b.ttl_s * 1000 } : {}),
      ...(b.workspace_quota_bytes ? { quotaBytes: b.workspace_quota_bytes } : {}),
    });
    this.blobRoutes = blobMount(this.blobs, (t) => tokens.authenticateRuntime(t) ?? firstIdentity(deviceAuths, t), limiter);
    this.stopSweeping = this.blobs.startSweeping(60_000);
  }

  /** A device's hello succeeded here: its record in the store (the card only when it changed), then its functions. */
  private async onOnline(c: DeviceConnection): Promise<void> {
    const store = this.store;
    if (!store) return;
    const { workspace_id: ws, device_id: dev } = c.identity;
    await store.upsertDevice(helloUpdate(c.identity, c.hello, await store.getDevice(ws, dev)));
    // Its hello succeeded: a refusal on record (from any node) no longer describes it.
    await store.clearRefusedHello(ws, dev);
    await this.functionLists?.refresh(c);
  }
}

/**
 * Refused hellos in the shared store: written as they happen (a runtime's call on any node then says why the
 * device is not there); the call path reads them from the store, and a successful hello clears them (`onOnline`).
 */
function pgRefusals(store: PgBridgeStore, log: Logger): RefusalStore {
  return {
    refusedHello: () => undefined,
    saveRefusedHello: (ws, dev, h) => void store.saveRefusedHello(ws, dev, h).catch((e: Error) => log.warn({ err: e.message, device_id: dev }, 'could not record a refused hello')),
    clearRefusedHello: () => undefined,
    refusedHelloKeys: () => [],
  };
}
