/**
 * Shared test peers for the login tests: a real node:http server on port 0 that mounts
 * `OAuthService.handleHttp` over a real SQLite database in a temp dir, with a clock the test can move.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { OAuthService, type OAuthServiceOptions } from '../../src/bridge/oauth/oauth-routes.js';
import { hashPassword } from '../../src/base/password.js';
import type { ConfigUser } from '../../src/bridge/oauth/oauth-store.js';

/** A cheap scrypt cost so tests stay quick; the format and code path are the production ones. */
export const TEST_COST = { N: 1024, r: 8, p: 1 };

/** Two users: alice in ws_a and ws_b, bob in ws_b. Passwords are `<name>-pw`. */
export async function testUsers(): Promise<ConfigUser[]> {
  return [
    { id: 'usr_alice', name: 'alice', password_hash: await hashPassword('alice-pw', TEST_COST), workspaces: ['ws_a', 'ws_b'] },
    { id: 'usr_bob', name: 'bob', password_hash: await hashPassword('bob-pw', TEST_COST), workspaces: ['ws_b'] },
  ];
}

/** A temp dir removed by the returned function. */
export function tempDir(prefix = 'aios-login-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A running test bridge with only the login routes. */
export interface OAuthBridge {
  url: string;
  service: OAuthService;
  db: Database.Database;
  /** Moves the bridge's clock forward. */
  advance(ms: number): void;
  /** Device ids the service reported as revoked. */
  revoked: string[];
  close(): Promise<void>;
}

/** Starts a bridge on 127.0.0.1:0. */
export async function startOAuthBridge(opts: Partial<Omit<OAuthServiceOptions, 'db' | 'public_url' | 'clock'>> = {}): Promise<OAuthBridge> {
  const tmp = tempDir('aios-bridge-');
  const db = new Database(join(tmp.dir, 'bridge.sqlite'));
  db.pragma('journal_mode = WAL');
  let offset = 0;
  // The service needs the server's URL, so it is built once the server listens; requests are served from then on.
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const service = new OAuthService({
    db,
    users: opts.users ?? (await testUsers()),
    public_url: url,
    device_poll_interval_s: 0,
    ...opts,
    clock: () => Date.now() + offset,
  });
  server.on('request', (req, res) => {
    service.handleHttp(req, res, new URL(req.url ?? '/', 'http://127.0.0.1')).then(
      (served) => {
        if (!served) {
          res.writeHead(404).end();
        }
      },
      (e: Error) => {
        res.writeHead(500).end(e.message);
      },
    );
  });
  const revoked: string[] = [];
  service.onRevoked((id) => revoked.push(id.device_id));
  return {
    url,
    service,
    db,
    revoked,
    advance: (ms) => {
      offset += ms;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      db.close();
      tmp.remove();
    },
  };
}

/** A minimal cookie-keeping form client for the approval page (the browser test uses a real browser instead). */
export class PageClient {
  private readonly cookies = new Map<string, string>();
  /** `headers` ride on every request (e.g. `accept-language`). */
  constructor(
    private readonly base: string,
    private readonly headers: Record<string, string> = {},
  ) {}

  private get cookie(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** GETs a page; returns status and body. */
  async get(path: string): Promise<{ status: number; body: string }> {
    const res = await fetch(this.base + path, { headers: { ...this.headers, cookie: this.cookie }, redirect: 'manual' });
    this.keep(res);
    return { status: res.status, body: await res.text() };
  }

  /** POSTs a form; follows one 303. */
  async post(path: string, form: Record<string, string>): Promise<{ status: number; body: string }> {
    const res = await fetch(this.base + path, {
      method: 'POST',
      headers: { ...this.headers, cookie: this.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
      redirect: 'manual',
    });
    this.keep(res);
    if (res.status === 303) return this.get(res.headers.get('location')!);
    return { status: res.status, body: await res.text() };
  }

  /** The CSRF token in the last page. */
  static csrf(body: string): string {
    const m = /name="csrf" value="([^"]+)"/.exec(body);
    if (!m) throw new Error('no csrf field on the page');
    return m[1]!;
  }

  private keep(res: Response): void {
    for (const set of res.headers.getSetCookie()) {
      const [pair] = set.split(';');
      const i = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, i), pair!.slice(i + 1));
    }
  }

  /** Signs in and approves (or denies) a user code; returns the final page. */
  async decide(userCode: string, user: string, action: 'approve' | 'deny', workspace = 'ws_a'): Promise<{ status: number; body: string }> {
    const start = await this.get(`/device?user_code=${encodeURIComponent(userCode)}`);
    let page = start;
    if (start.body.includes('id="signin"')) {
      page = await this.post('/device/signin', { csrf: PageClient.csrf(start.body), username: user, password: `${user}-pw`, user_code: userCode });
    }
    return this.post('/device/decision', { csrf: PageClient.csrf(page.body), user_code: userCode, action, workspace_id: workspace });
  }
}
