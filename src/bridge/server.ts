/**
 * The reference bridge: one HTTP server carrying the device WebSocket endpoint (`/v1/device`), the
 * runtime API, and mounts for device login and blobs. Writes `<data_dir>/bridge.json` when ready.
 */
import { coreMessage } from '../i18n/index.js';
import { SaidError } from '../i18n/said.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { rmSync } from 'node:fs';
import { ensurePrivateDir } from '../storage/private-dir.js';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { BridgeConfig } from '../config/bridge-config.js';
import { METHODS } from '../protocol/messages.js';
import { CLOSE } from '../protocol/ws-transport.js';
import { FunctionListReader, limitsCloseReason } from './device-limits.js';
import type { Logger } from '../base/logger.js';
import { APP_VERSION } from '../version.js';
import type { DeviceAuthenticator, DeviceIdentity, RuntimeAuthenticator, RuntimeScope } from './auth.js';
import { CallRouter } from './calls.js';
import { DeviceHub, type DeviceConnection } from './device-hub.js';
import { localDirectory, RuntimeApi, type CardCheck } from './http-api.js';
import { RateLimiter, sendError, StreamLimiter } from './http-util.js';
import { McpEndpoint, hostsFor, localMcpDirectory } from './mcp/endpoint.js';
import { MemoryMcpSessions } from './mcp/session-store.js';
import { localeFromEnv } from '../i18n/index.js';
import { sendJson } from '../base/http-body.js';
import { BridgeStore, helloUpdate } from './store.js';
import { BlobStore, blobMount } from './blob-store.js';
import { CallRetention } from './retention.js';
import type { JWK } from 'jose';
import { checkAdapterCard } from './card-check.js';
import { firstIdentity } from './auth.js';
import { writeJsonFileSync } from '../base/json-file.js';
import { serveConsole } from './console-routes.js';
import { bridgeIdleCollector } from '../base/idle-gc.js';

/** Another component serving some routes (device login, blobs). Returns true when it handled the request. */

export type HttpMount = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>;

export interface BridgeOptions {
  log: Logger;
  /** Extra device authenticators (device login); config `device_tokens` always apply. */
  deviceAuth?: DeviceAuthenticator[];
  mounts?: HttpMount[];
  /** The public key pinned at login for exactly this identity, to verify the Adapter Card it sends in hello. */
  pinnedKey?: (identity: DeviceIdentity) => JWK | null | Promise<JWK | null>;
  /** The §6.8 resolution window in ms (default 24 h); tests shorten it. */
  resolveWindowMs?: number;
  /** How often ended calls past `call_retention_s` are removed (default 1 h; 0: only on `retention.sweep()`). */
  retentionSweepMs?: number;
}

/** Tokens from the config file. */
export class ConfigTokens implements DeviceAuthenticator, RuntimeAuthenticator {
  constructor(private readonly c: BridgeConfig) {}
  authenticateDevice(token: string): DeviceIdentity | null {
    return Object.prototype.hasOwnProperty.call(this.c.device_tokens, token) ? this.c.device_tokens[token]! : null;
  }
  authenticateRuntime(token: string): RuntimeScope | null {
    if (!Object.prototype.hasOwnProperty.call(this.c.runtime_tokens, token)) return null;
    const e = this.c.runtime_tokens[token]!;
    return { workspace_id: e.workspace_id, runtime: { id: e.id, name: e.name } };
  }
}

/**
 * What is not wired to PostgreSQL yet (docs/deploy.md, "Clustered bridge"). `BridgeServer` (the single process)
 * runs on SQLite only: given `store.kind: postgres` it refuses to start rather than quietly using SQLite (a
 * cluster node is `cluster/node-server.ts`, started by `aios-device bridge`); a cluster node answers the routes
 * it does not serve (blobs without `blobs.dir`) 503 with this error's type and message.
 */
export class ClusterNotWiredError extends SaidError {
  readonly code = 'cluster_not_wired' as const;
  constructor(readonly nodeId: string | undefined) {
    super(coreMessage('core.cluster.not_wired'));
    this.name = 'ClusterNotWiredError';
  }
}

/** Throws {@link ClusterNotWiredError} for a config this build cannot run yet (before anything is opened). */
export function assertStoreWired(config: BridgeConfig): void {
  if (config.store.kind !== 'sqlite') throw new ClusterNotWiredError(config.cluster?.node_id);
}

/** The bridge process. */
export class BridgeServer {
  readonly store: BridgeStore;
  readonly hub: DeviceHub;
  readonly router: CallRouter;
  /**
   * Gives back, once the bridge is idle for a few seconds, the young generation that a burst of hellos or calls
   * grew (V8 keeps it at its largest while nothing allocates): the agent's rest collection, src/base/idle-gc.ts;
   * and after a storm of hellos, the old generation's pages the storm's garbage left half empty (compaction).
   */
  private readonly idle = bridgeIdleCollector((fields, msg) => this.opts.log.info(fields, msg));
  private readonly http: Server;
  private readonly api: RuntimeApi;
  private readonly mounts: HttpMount[];
  readonly blobs: BlobStore;
  /** The per-token cap on open streams: SSE, `wait` requests and MCP sessions (config `runtime_stream_limit`). */
  readonly streams: StreamLimiter;
  /** The MCP endpoints (docs/mcp.md); the SDK loads on their first request. */
  readonly mcp: McpEndpoint;
  private stopSweeping: (() => void) | undefined;
  /** Removes ended calls past `call_retention_s` (src/bridge/retention.ts). */
  readonly retention: CallRetention;
  private url = '';
  /** Reads devices' function lists within `device_limits`. */
  readonly functionLists: FunctionListReader;

  constructor(readonly config: BridgeConfig, private readonly opts: BridgeOptions) {
    assertStoreWired(config);
    ensurePrivateDir(config.data_dir);
    this.store = new BridgeStore(join(config.data_dir, 'bridge.sqlite'));
    this.retention = new CallRetention({ prune: (before, limit) => this.store.pruneEndedCalls(before, limit), retentionS: config.call_retention_s, log: opts.log, ...(opts.retentionSweepMs !== undefined ? { everyMs: opts.retentionSweepMs } : {}) });
    const tokens = new ConfigTokens(config);
    const deviceAuths: DeviceAuthenticator[] = [tokens, ...(opts.deviceAuth ?? [])];
    this.hub = new DeviceHub({
      auth: { authenticateDevice: (t) => firstIdentity(deviceAuths, t) },
      minClientVersion: config.min_client_version,
      heartbeatMs: config.heartbeat_ms,
      leaseMs: config.lease_ms,
      maxMessageBytes: config.max_message_bytes,
      log: opts.log,
      refusals: this.store,
    });
    // One transaction: a config may name thousands of devices. A known device keeps its record.
    this.store.transaction(() => {
      for (const id of Object.values(config.device_tokens)) this.store.upsertDevice({ ...id }, false);
    });
    this.router = new CallRouter(this.store, this.hub, opts.log, opts.resolveWindowMs !== undefined ? { resolveWindowMs: opts.resolveWindowMs } : {});
    this.functionLists = new FunctionListReader({
      limits: config.device_limits,
      log: opts.log,
      save: (c, functions, revision) => {
        this.store.upsertDevice({ ...c.identity, functions, functions_revision: revision });
        // A device that came (its functions are now known) or changed its functions: MCP sessions re-list.
        this.mcp.notifyChanged(c.identity.workspace_id, c.identity.device_id);
      },
      exceeded: (c, bound, message) => {
        this.store.upsertDevice({ ...c.identity, last_closed: { at: new Date().toISOString(), type: 'device_limits_exceeded', message } });
        c.peer.close(CLOSE.limits, limitsCloseReason(bound));
      },
    });
    // One bucket per token, shared by the runtime API and blob uploads (a device token uploads too).
    const limiter = new RateLimiter(config.runtime_rate_limit.per_second, config.runtime_rate_limit.burst);
    this.streams = new StreamLimiter(config.runtime_stream_limit);
    // What the runtime API and the MCP endpoints share: one store, one router, one token check, one rate
    // limit and one stream cap per token.
    const runtimeSide = { store: this.store, hub: this.hub, router: this.router, auth: tokens, limiter, streams: this.streams, maxBodyBytes: config.max_message_bytes };
    this.api = new RuntimeApi({
      ...runtimeSide,
      devices: localDirectory(this.store, this.hub),
      publicUrl: () => this.publicUrl,
      cardCheck: (d, card) => this.checkCard(d, card),
      minClientVersion: config.min_client_version,
    });
    let hosts: { url: string; set: ReadonlySet<string> } | undefined;
    this.mcp = new McpEndpoint({
      ...runtimeSide,
      directory: localMcpDirectory(this.store, this.hub),
      // In memory only: one process is the whole bridge (a cluster node passes PgMcpSessions).
      sessions: new MemoryMcpSessions(),
      config: config.mcp ?? {},
      allowedHosts: () => {
        if (hosts?.url !== this.url) hosts = { url: this.url, set: hostsFor(this.url, config.public_url) };
        return hosts.set;
      },
      log: opts.log,
      locale: localeFromEnv(),
    });
    this.blobs = new BlobStore({
      dir: config.blobs?.dir ?? join(config.data_dir, 'blobs'),
      ...(config.blobs?.max_bytes ? { maxBytes: config.blobs.max_bytes } : {}),
      ...(config.blobs?.ttl_s ? { ttlMs: config.blobs.ttl_s * 1000 } : {}),
      ...(config.blobs?.workspace_quota_bytes ? { quotaBytes: config.blobs.workspace_quota_bytes } : {}),
    });
    // Blobs are scoped to the caller's workspace: a device or runtime token of another workspace cannot read them.
    const blobs = blobMount(this.blobs, (t) => tokens.authenticateRuntime(t) ?? firstIdentity(deviceAuths, t), limiter);
    this.mounts = [blobs, ...(opts.mounts ?? [])];
    this.hub.on('online', (c: DeviceConnection) => {
      this.idle.touch();
      void this.onOnline(c);
    });
    this.hub.on('offline', (c: DeviceConnection) => {
      this.idle.touch();
      this.store.upsertDevice({ ...c.identity, last_seen: new Date().toISOString() });
      this.mcp.notifyChanged(c.identity.workspace_id, c.identity.device_id);
    });
    this.hub.on('notification', (c: DeviceConnection, method: string) => {
      if (method === METHODS.toolsChanged) this.functionLists.toolsChanged(c);
    });
    this.http = createServer((req, res) => {
      this.idle.touch();
      void this.serve(req, res);
    });
    this.http.on('upgrade', (req, socket, head) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/v1/device') this.hub.handleUpgrade(req, socket, head);
      else socket.destroy();
    });
  }

  /** The base URL runtimes use. */
  get publicUrl(): string {
    return this.config.public_url ?? this.url;
  }

  /** Listens; resolves with the URL; writes bridge.json. */
  async start(): Promise<string> {
    const { host: lh, port: lp } = this.config.listen;
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', (e: NodeJS.ErrnoException) =>
        reject(e.code === 'EADDRINUSE' ? new SaidError(coreMessage('core.bridge.port_in_use', { address: `${lh}:${lp}` }), { cause: e }) : e),
      );
      this.http.listen(lp, lh, () => resolve());
    });
    const a = this.http.address() as AddressInfo;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    this.url = `http://${host}:${a.port}`;
    this.stopSweeping = this.blobs.startSweeping(60_000);
    this.idle.touch();
    const file = join(this.config.data_dir, 'bridge.json');
    writeJsonFileSync(file, { pid: process.pid, url: this.url, device_url: this.url.replace(/^http/, 'ws') + '/v1/device', version: APP_VERSION }, 0o600);
    this.opts.log.info({ url: this.url }, 'bridge ready');
    Object.values(this.config.runtime_tokens).forEach((e, i) => {
      if (e.unnamed) this.opts.log.warn({ entry: i + 1, runtime_id: e.id }, 'a runtime_tokens entry has neither id nor name: its calls are attested by its position');
    });
    return this.url;
  }

  async stop(): Promise<void> {
    // Nothing may touch the store once it closes: stop listening to the sessions first.
    this.hub.removeAllListeners();
    this.stopSweeping?.();
    this.retention.stop();
    this.idle.stop();
    await this.mcp.close();
    this.router.close();
    this.hub.close();
    this.http.closeAllConnections();
    await new Promise<void>((r) => this.http.close(() => r()));
    this.store.close();
    rmSync(join(this.config.data_dir, 'bridge.json'), { force: true });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://bridge');
    } catch {
      return sendError(res, 400, 'bad_request', 'Bad request URL.');
    }
    try {
      if (url.pathname === '/health') return sendJson(res, 200, { status: 'ok', version: APP_VERSION });
      // The QA console: a static page that signs in with a runtime token and uses the runtime API.
      if (await serveConsole(req, res, url)) return;
      if (await this.api.handle(req, res, url)) return;
      if (await this.mcp.handle(req, res, url)) return;
      for (const m of this.mounts) if (await m(req, res, url)) return;
      sendError(res, 404, 'not_found', 'No such route.');
    } catch (e) {
      this.opts.log.error({ err: String(e), path: url.pathname }, 'request failed');
      if (!res.headersSent) sendError(res, 500, 'execution_failed', 'The bridge failed to serve the request.');
      else res.end();
    }
  }

  private async onOnline(c: DeviceConnection): Promise<void> {
    this.store.upsertDevice(helloUpdate(c.identity, c.hello, this.store.getDevice(c.identity.workspace_id, c.identity.device_id)));
    await this.functionLists.refresh(c);
  }

  /** Verifies a device's card against the key pinned at its login, if there is one. */
  checkCard(identity: DeviceIdentity, card: Record<string, unknown>): Promise<CardCheck> {
    return checkAdapterCard(identity, card, this.opts.pinnedKey, this.opts.log);
  }
}
