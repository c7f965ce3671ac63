/**
 * A real reference bridge, a real agent (`ui` confirmations, its local endpoint serving the page at `/ui/`)
 * and Debian's Chromium, for the page's tests.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { normalizeAgentConfig } from '../../src/config/agent-config.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { startAgent } from '../../src/app/start-agent.js';
import { silentLogger } from '../../src/base/logger.js';
import { BridgeServer } from '../../src/bridge/server.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { agentDoc, bridgeDoc, cli, ids, processStack, tempDir, tokens, until, type Proc } from '../helpers/stack.js';
import { testUsers } from '../login/helpers.js';
import { LOCAL_TOKEN_FILE } from '../../src/endpoint/local-token.js';

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A real bridge, a real agent with `ui` confirmations, its endpoint, the page's server and Chromium. */
export async function setup(opts: { locale?: string; agent?: Record<string, unknown>; bridge?: (t: ReturnType<typeof tokens>) => Record<string, unknown> } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'aios-renderer-'));
  const t = tokens();
  const bridge = new BridgeServer(normalizeBridgeConfig(bridgeDoc(dir, t, opts.bridge?.(t))), { log: silentLogger() });
  const url = await bridge.start();
  const config = normalizeAgentConfig(agentDoc(dir, url, t, { confirmations: { provider: 'ui', timeout_ms: 60_000 }, ...opts.agent }));
  const running = await startAgent(config, silentLogger(), { backoff: { baseMs: 20, capMs: 200, resetAfterMs: 60_000 } });
  await until(() => bridge.hub.isOnline(ids.device_id), 10_000, 'agent online');
  const ep = running.endpoint;
  assert.ok(ep?.info(), 'the agent runs its local endpoint');
  const endpoint = { http: ep!.info()!.http, token: ep!.localToken };
  const ui = { base: endpoint.http };
  const context: BrowserContext = await chromium.launchPersistentContext(join(dir, 'chromium'), { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS, locale: opts.locale ?? 'en-US' });
  const page: Page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  const client = new RuntimeClient({ bridge_url: url, token: t.runtime, workspace_id: ids.workspace_id, device_id: ids.device_id });
  return {
    dir,
    /** The bridge's address and the stack's tokens (another agent with the same device token replaces this one). */
    bridgeUrl: url,
    tokens: t,
    running,
    endpoint,
    ui,
    page,
    client,
    problems,
    async stop() {
      await context.close().catch(() => undefined);
      await running.stop().catch(() => undefined);
      await bridge.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}


/**
 * The same page against a bridge and an agent started by the CLI as separate processes (`aios-device
 * bridge`, `aios-device run`), found through the agent's `endpoint.json` and `local-token`.
 */
export async function cliSetup(opts: { locale?: string; agent?: Record<string, unknown> } = {}) {
  const stack = await processStack({ agent: { confirmations: { provider: 'ui', timeout_ms: 60_000 }, ...opts.agent } });
  const dataDir = join(stack.dir, 'agent');
  const ep = await until(() => {
    try {
      return JSON.parse(readFileSync(join(dataDir, 'endpoint.json'), 'utf8')) as { http: string };
    } catch {
      return undefined;
    }
  }, 20_000, 'endpoint.json');
  const endpoint = { http: ep!.http, token: readFileSync(join(dataDir, 'local-token'), 'utf8').trim() };
  const context: BrowserContext = await chromium.launchPersistentContext(join(stack.dir, 'chromium'), { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS, locale: opts.locale ?? 'en-US', acceptDownloads: true });
  const page: Page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  return {
    stack,
    dir: stack.dir,
    endpoint,
    ui: { base: endpoint.http },
    context,
    page,
    client: stack.client,
    problems,
    async stop() {
      await context.close().catch(() => undefined);
      await stack.stop();
    },
  };
}

/** Approves (or denies) a sign-in `url` on the bridge's own approval page in a new page of `context`, signing in as alice when asked. */
export async function decideSignIn(context: BrowserContext, url: string, action: 'approve' | 'deny'): Promise<void> {
  const approval = await context.newPage();
  try {
    await approval.goto(url);
    if (await approval.locator('#signin').isVisible()) {
      await approval.getByLabel('User name').fill('alice');
      await approval.getByLabel('Password').fill('alice-pw');
      await approval.locator('#signin').click();
    }
    await approval.locator('#user-code').waitFor();
    if (action === 'approve') await approval.locator('#workspace_id').selectOption('ws_b');
    await approval.locator(action === 'approve' ? '#approve' : '#deny').click();
    await approval.locator('#result').waitFor();
  } finally {
    await approval.close();
  }
}

/** A control method on an agent's local endpoint (`POST /rpc` with the local token); a JSON-RPC error throws. */
export function localRpc(base: () => string, token: () => string) {
  return async <T>(method: string, params: unknown = {}): Promise<T> => {
    const res = await fetch(`${base()}/rpc`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token()}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    const body = (await res.json()) as { result?: T; error?: unknown };
    if (body.error) throw new Error(JSON.stringify(body.error));
    return body.result as T;
  };
}

/**
 * A bridge with test users (`aios-device bridge`) and an agent that is not signed in yet (`aios-device
 * run`, its tokens kept in `<dir>/device/tokens.json`), as separate processes, and Chromium, for the
 * window's sign-in pages. `agent` is merged into the agent's config (identity, confirmations, handlers);
 * the page's errors go into `browser.problems`.
 */
export async function signedOutSetup(prefix: string, runtimeToken: string, agent: Record<string, unknown>, browser: { problems: string[]; viewport?: { width: number; height: number } }) {
  const dir = tempDir(prefix);
  const data = join(dir, 'device');
  let bridge: Proc | undefined;
  let agentProc: Proc | undefined;
  let context: BrowserContext | undefined;
  // Everything started so far, stopped: by the test's after(), or here when the setup itself fails.
  const stop = async () => {
    await context?.close().catch(() => undefined);
    await agentProc?.kill('SIGKILL');
    await bridge?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    mkdirSync(join(dir, 'bridge'), { recursive: true, mode: 0o700 });
    const bcfg = join(dir, 'bridge.cfg.json');
    writeFileSync(bcfg, JSON.stringify({ listen: { host: '127.0.0.1', port: 0 }, data_dir: join(dir, 'bridge'), users: await testUsers(), runtime_tokens: { [runtimeToken]: { workspace_id: 'ws_b' } }, device_poll_interval_s: 0 }));
    bridge = cli(['bridge', '--config', bcfg]);
    const bfile = join(dir, 'bridge', 'bridge.json');
    await until(() => existsSync(bfile), 30_000, 'bridge.json');
    const bridgeUrl = (JSON.parse(readFileSync(bfile, 'utf8')) as { url: string }).url;
    mkdirSync(data, { recursive: true, mode: 0o700 });
    const acfg = join(dir, 'agent.json');
    writeFileSync(acfg, JSON.stringify({
      data_dir: data,
      bridge: { url: bridgeUrl.replace(/^http/, 'ws') + '/v1/device', token_file: join(data, 'tokens.json') },
      local_endpoint: { host: '127.0.0.1', port: 0, socket: false },
      ...agent,
    }));
    const a: Proc = (agentProc = cli(['run', '--config', acfg]));
    const efile = join(data, 'endpoint.json');
    await until(() => existsSync(efile), 60_000, 'endpoint.json').catch((e: Error) => {
      throw new Error(`${e.message}; the agent said:\n${a.err}`);
    });
    const ctx: BrowserContext = (context = await chromium.launchPersistentContext(join(dir, 'chromium'), { executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS, locale: 'en-US', ...(browser.viewport ? { viewport: browser.viewport } : {}) }));
    const page: Page = ctx.pages()[0] ?? (await ctx.newPage());
    page.on('pageerror', (e) => browser.problems.push(`page error: ${e.message}`));
    return {
      dir,
      bridge,
      agent: a,
      bridgeUrl,
      ui: (JSON.parse(readFileSync(efile, 'utf8')) as { http: string }).http,
      localToken: readFileSync(join(data, LOCAL_TOKEN_FILE), 'utf8').trim(),
      context: ctx,
      page,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
