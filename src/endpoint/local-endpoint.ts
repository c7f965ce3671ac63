/**
 * The client's local endpoint (PROTOCOL.md §8): HTTP on loopback and a 0600 Unix socket, serving the
 * Adapter Card, JWKS, skill index, descriptors, health, metrics and JSON-RPC (POST and WebSocket) at /rpc.
 * It writes only its socket and the local token file; `endpoint.json` is the agent's (see `info()`).
 */
import { createHash } from 'node:crypto';
import { chmod, rmdir, unlink } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../base/logger.js';
import type { Descriptor } from '../protocol/messages.js';
import type { ErrorType } from '../protocol/errors.js';
import { decodePathSegment, httpError } from '../protocol/http.js';
import { buildSkillIndex, visibleDescriptor } from '../discovery/skill-index.js';
import { isAllowedOrigin, isLoopbackHost } from './host-check.js';
import { bearerFrom, loadOrCreateLocalToken, tokenMatches } from './local-token.js';
import { Metrics, METRICS_CONTENT_TYPE } from './metrics.js';
import { releaseOptimiser } from '../base/optimiser.js';
import { isUiPath, serveUi } from './static-ui.js';
import { RpcMethods, type RpcContext, type RpcMethod } from '../protocol/rpc-methods.js';
import type { JsonRpcPeer } from '../protocol/peer.js';
import { ExchangeTransport } from '../protocol/exchange-transport.js';
import { WebSocketTransport } from '../protocol/ws-transport.js';
import { isNamedPipe, prepareSocketPath } from './socket-path.js';
import { silentLogger } from '../base/logger.js';
import { BodyTooLargeError, readBody, sendJson, sendText } from '../base/http-body.js';
import { CARD_PATH, JWKS_PATH } from '../discovery/remote-adapter.js';

/** Bridge state shown by `/health`. */
export type BridgeState = 'connected' | 'connecting' | 'offline';

/** What `/health` says about the bridge: its state, and why the session stopped for good (and what to do) when it did. */
export interface HealthInfo {
  bridge: BridgeState;
  stopped?: { type: string; message: string; action: string };
}

/** Constructor options. */
export interface LocalEndpointOptions {
  /** Loopback address to bind (default 127.0.0.1). */
  host?: string;
  /** Preferred port (default 9527); when taken the next free one is used; 0 = any free port. */
  port?: number;
  /** Unix socket path (or Windows pipe); null = no socket. */
  socketPath?: string | null;
  /** The socket's folder when it was made for this run (a random name under the temp dir): removed at stop. */
  socketDirMade?: string;
  /** Holds the local token file. */
  dataDir: string;
  /** Client version for `/health`. */
  version: string;
  log?: Logger;
  /** How many ports to try, `port` included, when it is taken (default 20). */
  portAttempts?: number;
  /** Largest accepted request body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Folder of the tray UI page served at `/ui/` (none when unset). */
  uiDir?: string;
}

/** Where the endpoint listens once started. */
export interface EndpointInfo {
  http: string;
  socket: string | null;
  /** The configured port, when another process held it and the endpoint took a later one (`status` says so). */
  configured_port_taken?: number;
}

/** WebSocket subprotocol of `WS /rpc`; a browser that cannot set headers sends the token as `bearer.<token>`. */
export const LOCAL_RPC_SUBPROTOCOL = 'aios-local.v1';

type Provider<T> = () => T | Promise<T>;
type Route = 'card' | 'jwks' | 'skills' | 'descriptor' | 'health' | 'metrics' | 'rpc' | 'other';

const DESCRIPTOR_PATH = /^\/skills\/([^/]+)\/descriptor\.json$/;

/** `{ error: { code, type, message, retryable } }` (PROTOCOL.md §10's error body). */
function errorJson(type: ErrorType | 'method_not_allowed' | 'not_found', message: string): string {
  return JSON.stringify({ error: httpError(type, message) });
}

/** The local HTTP/WebSocket/Unix-socket server. */
export class LocalEndpoint {
  /** Counters and histograms served at `/metrics`; the dispatcher and session record into it. */
  readonly metrics = new Metrics();
  private readonly opts: Required<Omit<LocalEndpointOptions, 'log' | 'socketPath' | 'uiDir' | 'socketDirMade'>> & { socketPath: string | null; uiDir: string | undefined; socketDirMade: string | undefined };
  private readonly log: Logger;
  private readonly rpc = new RpcMethods();
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024, handleProtocols: (p) => (p.has(LOCAL_RPC_SUBPROTOCOL) ? LOCAL_RPC_SUBPROTOCOL : false) });
  private readonly clients = new Map<WebSocket, { authenticated: boolean; peer: JsonRpcPeer }>();
  private servers: Server[] = [];
  private token = '';
  private started: EndpointInfo | undefined;
  private cardProvider: ((authenticated: boolean) => object | Promise<object>) | undefined;
  private jwksProvider: Provider<object> | undefined;
  private descriptorsProvider: Provider<readonly Descriptor[]> = () => [];
  private healthProvider: Provider<HealthInfo> = () => ({ bridge: 'offline' });
  private hasPublicMethods = false;

  constructor(opts: LocalEndpointOptions) {
    this.opts = {
      host: opts.host ?? '127.0.0.1',
      port: opts.port ?? 9527,
      socketPath: opts.socketPath ?? null,
      socketDirMade: opts.socketDirMade,
      dataDir: opts.dataDir,
      version: opts.version,
      portAttempts: opts.portAttempts ?? 20,
      maxBodyBytes: opts.maxBodyBytes ?? 1024 * 1024,
      uiDir: opts.uiDir,
    };
    this.log = (opts.log ?? silentLogger()).child({ component: 'local-endpoint' });
  }

  /** Serves the signed Adapter Card (§7.1) from this provider. */
  /** The Adapter Card for a caller with (true) or without (false) credentials; the two are signed separately. */
  setCardProvider(p: (authenticated: boolean) => object | Promise<object>): void {
    this.cardProvider = p;
  }

  /** Serves `/.well-known/jwks.json` (`{ keys: [publicJwk] }`) from this provider. */
  setJwksProvider(p: Provider<object>): void {
    this.jwksProvider = p;
  }

  /** The registered functions' descriptors, for the skill index and `/skills/<id>/descriptor.json`. */
  setDescriptorsProvider(p: Provider<readonly Descriptor[]>): void {
    this.descriptorsProvider = p;
  }

  /** The bridge state shown by `/health`. */
  setHealthProvider(p: Provider<HealthInfo>): void {
    this.healthProvider = p;
  }

  /** Adds JSON-RPC methods for `/rpc`; `public` ones answer without the local token (none by default). */
  addMethods(methods: Record<string, RpcMethod>, opts: { public?: boolean } = {}): void {
    this.rpc.add(methods, opts);
    if (opts.public) this.hasPublicMethods = true;
  }

  /** Sends a JSON-RPC notification to every authenticated `WS /rpc` client. */
  broadcast(method: string, params: unknown): void {
    for (const c of this.clients.values()) if (c.authenticated) c.peer.notify(method, params);
  }

  /** The local token (for the tray UI and tests); empty before `start()`. */
  get localToken(): string {
    return this.token;
  }

  /** Where it listens, for the agent's `endpoint.json`; undefined before `start()`. */
  info(): EndpointInfo | undefined {
    return this.started;
  }

  /** Creates the token file if needed, then listens on loopback HTTP and the socket. */
  async start(): Promise<EndpointInfo> {
    if (this.started) return this.started;
    this.token = await loadOrCreateLocalToken(this.opts.dataDir);
    const tcp = this.makeServer(false);
    const port = await this.listenTcp(tcp);
    const taken = this.opts.port !== 0 && port !== this.opts.port ? this.opts.port : undefined;
    this.servers.push(tcp);
    const hostForUrl = this.opts.host.includes(':') ? `[${this.opts.host}]` : this.opts.host;
    let socket: string | null = null;
    if (this.opts.socketPath) {
      const path = this.opts.socketPath;
      try {
        await prepareSocketPath(path);
        const us = this.makeServer(true);
        await new Promise<void>((resolve, reject) => {
          us.once('error', reject);
          us.listen(path, () => {
            us.off('error', reject);
            resolve();
          });
        });
        this.servers.push(us);
        if (!isNamedPipe(path)) await chmod(path, 0o600);
      } catch (e) {
        // E.g. another agent listens on the socket: the TCP server must not keep the refused process alive.
        await this.stop();
        throw e;
      }
      socket = path;
    }
    this.started = { http: `http://${hostForUrl}:${port}`, socket, ...(taken !== undefined ? { configured_port_taken: taken } : {}) };
    // Another process (maybe another user's) holds the configured port: clients that assume it would reach that one.
    if (taken !== undefined) this.log.warn({ configured_port: taken, port }, 'the configured local endpoint port is taken by another process; listening on another port (endpoint.json names it)');
    this.log.info({ http: this.started.http, socket }, 'local endpoint listening');
    return this.started;
  }

  /** Closes every connection and server and removes the socket file. */
  async stop(): Promise<void> {
    for (const ws of this.clients.keys()) ws.terminate();
    this.clients.clear();
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
    this.servers = [];
    const sock = this.started?.socket;
    if (sock && !isNamedPipe(sock)) await unlink(sock).catch(() => undefined);
    if (this.opts.socketDirMade) await rmdir(this.opts.socketDirMade).catch(() => undefined);
    this.started = undefined;
  }

  private async listenTcp(server: Server): Promise<number> {
    const first = this.opts.port;
    const attempts = first === 0 ? 1 : this.opts.portAttempts;
    for (let i = 0; i < attempts; i++) {
      const port = first === 0 ? 0 : first + i;
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, this.opts.host, () => {
            server.off('error', reject);
            resolve();
          });
        });
        const addr = server.address();
        if (addr && typeof addr === 'object') return addr.port;
        throw new Error('server has no address');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE' || i === attempts - 1) throw e;
        this.log.debug({ port }, 'port taken, trying the next one');
      }
    }
    throw new Error('no free port');
  }

  private makeServer(viaSocket: boolean): Server {
    const server = createServer((req, res) => {
      this.handle(req, res, viaSocket).catch((e: unknown) => {
        this.log.error({ err: (e as Error).message }, 'local endpoint request failed');
        if (!res.headersSent) sendText(res, 500, 'application/json', errorJson('execution_failed', 'Internal error.'));
        else res.end();
      });
    });
    server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head, viaSocket));
    return server;
  }

  private isAuthenticated(req: IncomingMessage, _viaSocket: boolean): boolean {
    // The socket needs the token like TCP does: reaching a 0600 socket proves the uid, not that the caller
    // may answer prompts or add grants (any process of this user, an adapter among them, could).
    const proto = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((s) => s.trim())
      .find((s) => s.startsWith('bearer.'));
    return tokenMatches(this.token, bearerFrom(req.headers.authorization) ?? proto?.slice('bearer.'.length));
  }

  private routeOf(path: string): Route {
    switch (path) {
      case CARD_PATH:
        return 'card';
      case JWKS_PATH:
        return 'jwks';
      case '/.well-known/skill-sharing':
        return 'skills';
      case '/health':
        return 'health';
      case '/metrics':
        return 'metrics';
      case '/rpc':
        return 'rpc';
      default:
        return DESCRIPTOR_PATH.test(path) ? 'descriptor' : 'other';
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse, viaSocket: boolean): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = this.routeOf(url.pathname);
    // A local client's call is use: from now on the hot paths are optimised (base/optimiser.ts).
    if (route === 'rpc') releaseOptimiser();
    res.on('finish', () => this.metrics.incHttp(route, res.statusCode));
    if (!isLoopbackHost(req.headers.host)) {
      sendText(res, 403, 'application/json', errorJson('unauthorized', 'The Host header must name a loopback address.'));
      return;
    }
    const authenticated = this.isAuthenticated(req, viaSocket);
    const json = (status: number, value: unknown, headers: Record<string, string> = {}) => sendJson(res, status, value, headers);
    const method = req.method ?? 'GET';
    const getOnly = route !== 'rpc' && route !== 'other';
    if (getOnly && method !== 'GET' && method !== 'HEAD') {
      sendText(res, 405, 'application/json', errorJson('method_not_allowed', 'Method not allowed.'), { Allow: 'GET, HEAD' });
      return;
    }
    switch (route) {
      case 'card':
        return this.serveCard(req, res, authenticated);
      case 'jwks': {
        if (!this.jwksProvider) return sendText(res, 503, 'application/json', errorJson('not_ready', 'No signing key yet.'));
        return json(200, await this.jwksProvider(), { 'Cache-Control': 'max-age=300' });
      }
      case 'skills': {
        const type = url.searchParams.get('type');
        const index = buildSkillIndex(await this.descriptorsProvider(), {
          provider: await this.providerInfo(),
          baseUrl: this.started?.http ?? 'http://127.0.0.1',
          authenticated,
          type: type ?? undefined,
        });
        // Vary: the answer differs with credentials, so a shared cache must not hand one to the other.
        return json(200, index, { 'Cache-Control': 'no-cache', Vary: 'Authorization' });
      }
      case 'descriptor': {
        const id = decodePathSegment(DESCRIPTOR_PATH.exec(url.pathname)?.[1] ?? '');
        const d = id ? visibleDescriptor(await this.descriptorsProvider(), id, authenticated) : undefined;
        if (!d) return sendText(res, 404, 'application/json', errorJson('unknown_function', 'No such skill.'));
        return json(200, d, { 'Cache-Control': 'no-cache', Vary: 'Authorization' });
      }
      case 'health': {
        const h = await this.healthProvider();
        return json(200, { status: 'ok', bridge: h.bridge, version: this.opts.version, ...(h.stopped ? { stopped: h.stopped } : {}) });
      }
      case 'metrics':
        if (!authenticated) return this.unauthorized(res);
        if (!isAllowedOrigin(req.headers.origin)) return this.forbiddenOrigin(res);
        return sendText(res, 200, METRICS_CONTENT_TYPE, this.metrics.render());
      case 'rpc':
        return this.serveRpc(req, res, authenticated);
      default:
        if (this.opts.uiDir && isUiPath(url.pathname)) return serveUi(req, res, url.pathname, this.opts.uiDir);
        return sendText(res, 404, 'application/json', errorJson('not_found', 'No such route.'));
    }
  }

  private unauthorized(res: ServerResponse): void {
    sendText(res, 401, 'application/json', errorJson('unauthorized', 'This route needs the local token.'), { 'WWW-Authenticate': 'Bearer' });
  }

  private forbiddenOrigin(res: ServerResponse): void {
    sendText(res, 403, 'application/json', errorJson('unauthorized', 'Requests from this origin are not accepted.'));
  }

  private async providerInfo(): Promise<{ name: string; url?: string }> {
    const card = (this.cardProvider ? await this.cardProvider(false) : undefined) as { adapter?: { name?: unknown } } | undefined;
    const name = typeof card?.adapter?.name === 'string' ? card.adapter.name : 'aios-device';
    return this.started ? { name, url: this.started.http } : { name };
  }

  private async serveCard(req: IncomingMessage, res: ServerResponse, authenticated: boolean): Promise<void> {
    if (!this.cardProvider) {
      sendText(res, 503, 'application/json', errorJson('not_ready', 'The adapter card is not ready yet.'));
      return;
    }
    const body = JSON.stringify(await this.cardProvider(authenticated));
    const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;
    // no-cache (not max-age): functions can change at any time, and the ETag makes revalidation cheap.
    const headers = { ETag: etag, 'Cache-Control': 'no-cache', Vary: 'Authorization' };
    const inm = req.headers['if-none-match'];
    if (inm && inm.split(',').map((s) => s.trim()).includes(etag)) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    sendText(res, 200, 'application/json; charset=utf-8', body, headers);
  }

  private async serveRpc(req: IncomingMessage, res: ServerResponse, authenticated: boolean): Promise<void> {
    if (req.method !== 'POST') {
      sendText(res, 405, 'application/json', errorJson('method_not_allowed', 'Use POST or a WebSocket.'), { Allow: 'POST' });
      return;
    }
    if (!isAllowedOrigin(req.headers.origin)) return this.forbiddenOrigin(res);
    if (!authenticated && !this.hasPublicMethods) return this.unauthorized(res);
    // Only JSON: a cross-site form or text/plain post cannot reach a method.
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      sendText(res, 415, 'application/json', errorJson('invalid_arguments', 'Content-Type must be application/json.'));
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req, this.opts.maxBodyBytes);
    } catch (e) {
      if (!(e instanceof BodyTooLargeError)) throw e;
      sendText(res, 413, 'application/json', errorJson('payload_too_large', 'The request body is too large.'));
      req.destroy();
      return;
    }
    let refused = false;
    const exchange = new ExchangeTransport();
    this.rpc.open(exchange, { authenticated, onUnauthorized: () => (refused = true) }, { onError: this.rpcFault });
    const out = await exchange.exchange(body.toString('utf8'));
    if (out === undefined) {
      res.writeHead(204, { 'Cache-Control': 'no-store' });
      res.end();
      return;
    }
    const status = refused ? 401 : 200;
    sendText(res, status, 'application/json; charset=utf-8', out);
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, viaSocket: boolean): void {
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== '/rpc') return refuse(404, 'Not Found');
    releaseOptimiser();
    if (!isLoopbackHost(req.headers.host)) return refuse(403, 'Forbidden');
    if (!isAllowedOrigin(req.headers.origin)) return refuse(403, 'Forbidden');
    const authenticated = this.isAuthenticated(req, viaSocket);
    if (!authenticated && !this.hasPublicMethods) return refuse(401, 'Unauthorized');
    this.wss.handleUpgrade(req, socket, head, (ws) => this.attach(ws, authenticated));
  }

  private attach(ws: WebSocket, authenticated: boolean): void {
    const closers: (() => void)[] = [];
    const transport = new WebSocketTransport(ws);
    const ctx: RpcContext = {
      authenticated,
      notify: (method, params) => void peer.notify(method, params),
      onClose: (cb) => closers.push(cb),
    };
    const peer = this.rpc.open(transport, ctx, { onError: this.rpcFault }, () => {
      this.clients.delete(ws);
      for (const cb of closers) cb();
    });
    this.clients.set(ws, { authenticated, peer });
  }

  /** Faults of /rpc that have no caller to answer (a method that crashed, a frame that could not be sent). */
  private readonly rpcFault = (err: unknown, context: string): void => {
    this.log.warn({ err: err instanceof Error ? err.message : String(err), context }, 'local rpc fault');
  };
}
