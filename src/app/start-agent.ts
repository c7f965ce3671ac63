/**
 * Starts a complete agent from a config: the one place where subsystems are wired together, used by
 * `aios-device run`, the demo and end-to-end tests.
 */
import { ensurePrivateDir } from '../storage/private-dir.js';
import type { AgentConfig } from '../config/agent-config.js';
import { ConfigError } from '../config/load.js';
import { adminPolicyProblems } from '../consent/index.js';
import { openConsent, type Consent } from './consent-parts.js';
import type { Logger } from '../base/logger.js';
import { Agent, configTokenProvider, type AgentOptions, type TokenProvider } from '../agent/agent.js';
import type { SessionConnection } from '../agent/session.js';
import { HttpBlobClient } from '../agent/blob-client.js';
import { loadDeviceCredentials, tokenProvider, type DeviceCredentials } from '../identity/device-credentials.js';
import { isSecretFile } from '../identity/secret-store.js';
import { loadOrCreateDeviceKey, type DeviceKey } from '../identity/device-key.js';
import { FileSecretStore } from '../identity/secret-store.js';
import { consentControlHandlers, CONTROL_EVENTS } from '../consent/index.js';
import { MAX_OFFLINE_S } from '../control/api.js';
import { serveControlApi } from '../control/server.js';
import { METHODS } from '../protocol/messages.js';
import type { RpcMethod } from '../protocol/rpc-methods.js';
import type { LocalEndpoint } from '../endpoint/local-endpoint.js';
import { join } from 'node:path';
import { watch } from 'node:fs';
import { LOGIN_FILE, readLoginState } from '../identity/login-state.js';
import { SIGNED_IN_AGAIN, signedInElsewhere, stopAdvice, stopNoticeAction } from '../agent/stop-advice.js';
import { coreMessage, localeFromEnv, strings } from '../i18n/index.js';
import { startDiscovery, type Discovery } from './discovery-wiring.js';
import { showNotice } from '../base/user-notice.js';
import { GrantStore } from '../grants/grant-store.js';
import { FunctionSwitches } from '../agent/function-switches.js';
import { UserSettingsFile } from '../agent/user-settings.js';
import { applyStoredLogLevel, settingsControlHandlers } from '../agent/settings-methods.js';
import type { CallObserver } from '../seams/call-seams.js';
import { SignInService, signInControlHandlers } from '../agent/sign-in.js';
import { loadOrCreateDeviceId } from '../identity/device-id.js';
import { existsSync } from 'node:fs';
import { APP_VERSION } from '../version.js';
import { RPC, RpcError } from '../protocol/errors.js';
import { IdleCollector } from '../base/idle-gc.js';

/** A running agent and how to stop it. */
export interface RunningAgent {
  agent: Agent;
  /** The consent pieces: gate, prompt queue, pause switch, audit trail (src/app/consent-parts.ts). */
  consent: Consent;
  /** The live grants (control.grants.* and the tray's settings change them). */
  grants: GrantStore;
  /** Functions on and off (control.functions.* and the tray's Settings change them). */
  functions: FunctionSwitches;
  /** Every control method the local endpoint serves (consent, grants, Settings), for the tray's IPC. */
  control: Record<string, RpcMethod>;
  /** The device key: from login (keychain), or a local one for a provisioned device. */
  deviceKey: DeviceKey;
  discovery: Discovery;
  /** The local endpoint (§8), unless `local_endpoint.enabled` is false. */
  endpoint: LocalEndpoint | undefined;
  endpointFile: string;
  /** The sign-in the window drives (control.signin.*); undefined for a device provisioned with a config token. */
  signin: SignInService | undefined;
  stop(): Promise<void>;
}

/** What the owner of a running agent is asked to do (see agent-host.ts). */
export interface AgentHooks {
  /** A sign-in of another identity (or the first one) was stored: start the agent again to use it. */
  onNewIdentity?(): void;
}

/** Builds and starts the agent and writes endpoint.json. */
export async function startAgent(config: AgentConfig, log: Logger, extra: Partial<AgentOptions> = {}, hooks: AgentHooks = {}): Promise<RunningAgent> {
  // Before anything reads or writes there: the data folder is private, or the agent does not start.
  if (ensurePrivateDir(config.data_dir)) log.warn({ data_dir: config.data_dir }, 'the data folder could be read by other users; it is now mode 0700');
  let creds = extra.tokens ? undefined : await loginCredentials(config);
  if (creds) config = withLogin(config, creds);
  // Not signed in and not provisioned by the config: run without a bridge until the window (or `login`) signs in.
  const provisioned = extra.tokens !== undefined || (await provisionedByConfig(config));
  const signedOut = !creds && !provisioned;
  const configBridge = config.bridge?.url;
  if (signedOut) {
    config = await signedOutConfig(config);
    log.warn({}, 'not signed in: the agent runs without a bridge until someone signs in from the window (/ui/) or with `aios-device login`');
  }
  // The user's Settings: functions off (under the config's ceiling) and the log level, live.
  const userSettings = new UserSettingsFile(config.data_dir, log);
  applyStoredLogLevel({ settings: userSettings, log });
  const functions = extra.functions ?? new FunctionSwitches({ adminDisabled: config.functions?.disabled, dataDir: config.data_dir, log: log.child({ component: 'settings' }) });
  const consent = openConsent(config, { log: log.child({ component: 'consent' }), auditInWorker: true, isDisabled: (id) => functions.isDisabled(id) });
  consent.start();
  // One live grant store for the handlers, the dispatcher's resource check and control.grants.*.
  const grants = new GrantStore({ dataDir: config.data_dir, log: log.child({ component: 'grants' }) });
  // Through `current`, so that a new sign-in (`logout` + `login` while this runs) replaces the tokens in place.
  let current: TokenProvider | undefined = creds ? tokenProvider(creds.tokens) : undefined;
  const tokens: TokenProvider = extra.tokens ?? (current ? { getAccessToken: () => current!.getAccessToken(), onUnauthorized: () => current!.onUnauthorized!() } : configTokenProvider(config));
  const onRefreshError = (e: Error) => log.warn({ err: String(e) }, 'token refresh failed; will retry');
  creds?.tokens.start(onRefreshError);
  let agent: Agent;
  // Blobs go to the bridge node the session is connected to (`bridge.urls`), else the first address.
  const firstUrl = config.bridge?.url;
  const blobs = firstUrl ? new HttpBlobClient({ baseUrl: () => agent.session?.url ?? firstUrl, token: () => tokens.getAccessToken() }) : undefined;
  // Calls feed /metrics once the endpoint exists (the observer is registered before it is built).
  let discovery: Discovery | undefined;
  // Memory back once the agent is idle (after start-up, then after each busy period): src/base/idle-gc.ts.
  const idle = new IdleCollector({ busy: () => agent.dispatcher.activeCount > 0 });
  const metrics: CallObserver = {
    onFinished({ outcome }) {
      idle.touch();
      const m = discovery?.endpoint?.metrics;
      if (!m) return;
      m.observeCall(outcome.function, outcome.state, outcome.duration_ms ?? 0);
      if (outcome.confirmation?.required) m.incConfirmation(outcome.confirmation.decision);
    },
  };
  try {
    agent = new Agent(config, {
      log,
      consent: consent.gate,
      grants,
      functions,
      observers: [consent.trail, metrics],
      tokens,
      ...(blobs ? { blobs } : {}),
      adapterCard: () => discovery?.card(),
      methods: bridgeRegistryMethods(() => discovery),
      ...extra,
    });
  } catch (e) {
    // E.g. the journal is in use by another agent: release what was opened.
    creds?.tokens.stop();
    consent.close();
    throw e;
  }
  agent.signInKind = creds || signedOut ? 'login' : 'config';
  // Serialised: the window's sign-in and the folder watch may both report the same new login.
  let pickUpChain = Promise.resolve();
  let restarting = false;
  const pickUp = (): Promise<void> => (pickUpChain = pickUpChain.then(() => pickUpLogin()).catch((e: unknown) => log.warn({ err: String(e) }, 'could not apply the new sign-in')));
  const signin = provisioned
    ? undefined
    : new SignInService(
        {
          dataDir: config.data_dir,
          tokenFile: config.bridge?.token_file,
          defaultBridgeUrl: configBridge ?? creds?.state.bridge_url,
          clientVersion: APP_VERSION,
          deviceName: config.identity?.device_name,
          log: log.child({ component: 'signin' }),
          onSignedIn: () => pickUp(),
          onSigningOut: () => {
            creds?.tokens.stop();
            agent.session?.stop();
          },
        },
        creds?.state ?? null,
      );
  agent.on('fatal', (f) => {
    if (f.type === 'unauthorized') signin?.noteSignedOut();
    const advice = stopAdvice(f, agent.signInKind);
    log.error({ type: f.type, action: advice.action }, `bridge session stopped: ${f.message}`);
    const locale = localeFromEnv();
    const title = f.type === 'client_outdated' ? 'core.notice.update_title' : f.type === 'unauthorized' ? 'core.notice.signed_out_title' : undefined;
    if (title) void showNotice(strings.render(coreMessage(title), locale), stopNoticeAction(advice, locale), log);
  });
  // A sign-in stored while the agent runs (login.json rewritten) is picked up without a restart.
  async function pickUpLogin(): Promise<void> {
        // A logout removes the file: nothing to pick up until the next login writes it.
        if (restarting || !(await readLoginState(config.data_dir))) return;
        const next = await loginCredentials(config).catch((e: unknown) => {
          log.warn({ err: String(e) }, 'a new sign-in was stored but could not be read');
          return undefined;
        });
        if (!next || next.state.logged_in_at === creds?.state.logged_in_at) return;
        signin?.noteSignedIn(next.state);
        const id = agent.identity;
        if (signedOut || next.state.device_id !== id.deviceId || next.state.workspace_id !== id.workspaceId || next.state.user_id !== id.userId) {
          // The journal and the session are bound to one identity: a new one means a new agent.
          if (hooks.onNewIdentity) {
            restarting = true;
            log.info({ workspace_id: next.state.workspace_id, user_id: next.state.user_id }, 'signed in as a new identity; starting the agent again');
            hooks.onNewIdentity();
            return;
          }
          agent.emit('signin', { reconnecting: false, message: signedInElsewhere(`workspace ${next.state.workspace_id}, user ${next.state.user_id}, device ${next.state.device_id}`) });
          return;
        }
        creds?.tokens.stop();
        creds = next;
        current = tokenProvider(next.tokens);
        next.tokens.start(onRefreshError);
        log.info({}, 'new sign-in picked up; reconnecting');
        agent.emit('signin', { reconnecting: true, message: SIGNED_IN_AGAIN });
        agent.session?.stop();
        agent.session?.start();
  }
  const loginWatch = signin ? watchLogin(config.data_dir, pickUp, log) : undefined;
  let lastReconnects = 0;
  agent.on('status', (st) => {
    if (st === 'connected' && agent.session && agent.session.reconnects > lastReconnects) {
      lastReconnects = agent.session.reconnects;
      discovery?.endpoint?.metrics.incReconnect();
    }
  });
  let control: Record<string, RpcMethod>;
  let offlineTimer: NodeJS.Timeout | undefined;
  const key = creds?.key ?? (await loadOrCreateDeviceKey(new FileSecretStore(join(config.data_dir, 'device-key.json')), agent.identity.deviceId));
  try {
    await agent.load();
    // Handlers hear of a pause or resume (tray, page, or `aios-device pause` from another process).
    consent.events.on(CONTROL_EVENTS.status, (st: { paused: boolean }) => void agent.setPaused(st.paused));
    void agent.setPaused(consent.gate.isPaused());
    // The activity list shows every call answered so far: a call's audit row waits up to 10 ms for the
    // dispatcher's book-keeping otherwise.
    const audit = { list: (f: Parameters<typeof consent.audit.list>[0]) => (agent.dispatcher.flushBookkeeping(), consent.audit.list(f)) };
    const consentHandlers = consentControlHandlers({ ...consent, audit }, grants);
    // The whole control API, by key (src/control/api.ts): consent's, Settings', the sign-in's
    // and the session's handlers, served with one params check (src/control/server.ts).
    control = serveControlApi({
      ...consentHandlers,
      ...settingsControlHandlers({ agent, switches: functions, settings: userSettings, log, logFile: config.log?.file }),
      ...(signin ? signInControlHandlers(signin) : {}),
      // Which third-party adapters run without the sandbox (adapters.unsandboxed: allow) and which wait for
      // approval ride along with the status; so does the sign-in state (not signed in / waiting with a code / signed in as … in …).
      status: async (p, ctx) => ({
        ...(await consentHandlers.status!(p, ctx)),
        adapters: adapterStatus(discovery),
        ...(signin ? { signin: signin.status() } : {}),
      }),
      // Drops the bridge link and reconnects at once (docs/qa-trial.md: the trial's reconnect check).
      reconnectSession: ({ dry_run }) => {
        if (dry_run !== true) agent.session?.dropAndReconnect();
        return { ok: true, status: agent.session?.status ?? 'offline' };
      },
      // Drops the bridge link and stays offline `seconds` (the trial's device_offline check), then connects again.
      takeSessionOffline: ({ seconds, dry_run }) => {
        if (dry_run === true) return { ok: true, status: agent.session?.status ?? 'offline' };
        if (seconds === undefined) throw new RpcError(RPC.invalid_params, `seconds must be a whole number from 1 to ${MAX_OFFLINE_S}`);
        const session = agent.session;
        if (!session) throw new RpcError(RPC.invalid_params, 'the agent has no bridge session to take offline (not signed in)');
        clearTimeout(offlineTimer);
        session.stop();
        log.info({ seconds }, 'bridge link taken offline on request');
        offlineTimer = setTimeout(() => {
          offlineTimer = undefined;
          if (agent.session === session) session.start();
        }, seconds * 1000);
        offlineTimer.unref();
        return { ok: true, status: session.status, back_at: new Date(Date.now() + seconds * 1000).toISOString() };
      },
    });
    discovery = await startDiscovery(agent, config, key, log, [control, agent.hostServices.methods() as Record<string, RpcMethod>]);
    const endpoint = discovery.endpoint;
    // A scrape counts every call answered so far: the calls' book-keeping waits up to 10 ms otherwise.
    endpoint?.metrics.beforeRender(() => agent.dispatcher.flushBookkeeping());
    // The bridge keeps the card it got in hello: after a function was turned off or on (tools_changed
    // already went out), the re-signed card reaches it through a new hello.
    let rehello = false;
    functions.on('change', () => (rehello = true));
    discovery.onCardChanged(() => {
      if (!rehello) return;
      rehello = false;
      log.info({}, 'functions turned on or off in Settings: reconnecting to republish the adapter card');
      agent.session?.dropAndReconnect();
    });
    if (endpoint) for (const ev of Object.values(CONTROL_EVENTS)) consent.events.on(ev, (p: unknown) => endpoint.broadcast(ev, p));
    if (endpoint && signin) signin.on('change', (v) => endpoint.broadcast(SIGNIN_EVENT, v));
    if (endpoint) {
      // The page in a browser has no tray IPC: it hears of the session here, stopped for good (and why) or back.
      const bridgeChanged = (): void => {
        const stopped = agent.stopped();
        endpoint.broadcast(BRIDGE_EVENT, { bridge: agent.session?.status ?? 'offline', ...(stopped ? { stopped } : {}) });
      };
      agent.on('status', bridgeChanged);
      agent.on('fatal', bridgeChanged);
    }
    consent.board.setHandlerStatus(() => agent.hostServices.status());
    agent.hostServices.onChange(() => consent.board.changed());
    const bad = adminPolicyProblems(config.policy ?? {}, agent.registry.descriptors());
    if (bad.length) throw new ConfigError(config.source, bad);
    agent.connect();
  } catch (e) {
    loginWatch?.close();
    signin?.close();
    await discovery?.stop().catch(() => undefined);
    await agent.stop().catch(() => undefined);
    creds?.tokens.stop();
    consent.close();
    throw e;
  }
  const d = discovery;
  const info = d.endpoint?.info();
  const endpointFile = agent.writeEndpointFile(info ? { http: info.http, ...(info.socket ? { socket: info.socket } : {}), ...(info.configured_port_taken !== undefined ? { configured_port_taken: info.configured_port_taken } : {}) } : {});
  log.info({ endpoint: endpointFile, http: info?.http, functions: agent.registry.ids().length }, 'agent ready');
  idle.touch();
  return {
    agent,
    consent,
    grants,
    functions,
    control,
    deviceKey: key,
    discovery: d,
    endpoint: d.endpoint,
    endpointFile,
    signin,
    async stop() {
      clearTimeout(offlineTimer);
      idle.stop();
      loginWatch?.close();
      signin?.close();
      await agent.stop();
      await d.stop();
      creds?.tokens.stop();
      consent.close();
    },
  };
}

/** The adapters part of `control.status`: ids of the local adapters running unsandboxed, and of those waiting for approval. */
function adapterStatus(discovery: Discovery | undefined): { unsandboxed: string[]; pending: string[] } {
  const list = discovery?.adapters.listAdapters() ?? [];
  return {
    unsandboxed: list.filter((e) => e.status.available && e.status.unsandboxed).map((e) => e.id),
    pending: list.filter((e) => e.pending).map((e) => e.id),
  };
}

/**
 * The `aios/registry.*` methods served over the bridge session (§7.4): subscribers are notified on the
 * connection they subscribed on, and their subscription ends with it (the bridge subscribes again).
 */
function bridgeRegistryMethods(discovery: () => Discovery | undefined): NonNullable<AgentOptions['methods']> {
  const names = [METHODS.registrySearch, METHODS.registryInfo, METHODS.registryRefresh, METHODS.registrySubscribe, METHODS.registryUnsubscribe];
  return Object.fromEntries(
    names.map((n) => [
      n,
      (params: unknown, conn: SessionConnection) => {
        const m = discovery()?.adapters.registryMethods()[n];
        if (!m) throw new Error('discovery is not ready');
        return m(params ?? {}, { authenticated: true, notify: conn.notify, onClose: conn.onClose });
      },
    ]),
  );
}

/**
 * The credentials `aios-device login` stored, when the config does not provision a token itself
 * (`bridge.token`, or a `bridge.token_file` holding a bare token). Undefined when the device never
 * signed in and the config names no bridge (a local-only agent).
 */
async function loginCredentials(config: AgentConfig): Promise<DeviceCredentials | undefined> {
  if (config.bridge?.token) return undefined;
  const file = config.bridge?.token_file;
  if (file && !(await isSecretFile(file))) return undefined;
  try {
    return await loadDeviceCredentials({ dataDir: config.data_dir, tokenFile: file });
  } catch (e) {
    // Not signed in (yet): the agent runs signed out and the window offers to sign in.
    if ((e as { type?: string }).type === 'unauthorized') return undefined;
    throw e;
  }
}

/** The notification the page gets on every sign-in change (a `SignInView`). */
export const SIGNIN_EVENT = 'control/notification.signin';

/** The notification the page gets when the bridge session's state changes: `{ bridge, stopped? }`, as in `/health`. */
export const BRIDGE_EVENT = 'control/notification.bridge';

/** Workspace and user of an agent that is not signed in: its journal stays empty (no bridge, no calls). */
const NOT_SIGNED_IN = '(not signed in)';

/** True when the config itself provides the bridge token (`bridge.token`, or a `bridge.token_file` holding a bare token). */
async function provisionedByConfig(config: AgentConfig): Promise<boolean> {
  if (config.bridge?.token) return true;
  const file = config.bridge?.token_file;
  return Boolean(file && existsSync(file) && !(await isSecretFile(file)));
}

/** The config of an agent that is not signed in: no bridge to connect to, the device's own id. */
async function signedOutConfig(config: AgentConfig): Promise<AgentConfig> {
  const { url: _none, urls: _noList, ...bridge } = config.bridge ?? {};
  return {
    ...config,
    bridge,
    identity: {
      workspace_id: config.identity?.workspace_id ?? NOT_SIGNED_IN,
      user_id: config.identity?.user_id ?? NOT_SIGNED_IN,
      device_id: config.identity?.device_id ?? (await loadOrCreateDeviceId(config.data_dir)),
      ...(config.identity?.device_name ? { device_name: config.identity.device_name } : {}),
    },
  };
}

/** Fills the bridge URL and identity from the login where the config leaves them out. */
function withLogin(config: AgentConfig, creds: DeviceCredentials): AgentConfig {
  const s = creds.state;
  return {
    ...config,
    bridge: { ...config.bridge, url: config.bridge?.url ?? s.device_url },
    identity: {
      workspace_id: config.identity?.workspace_id ?? s.workspace_id,
      user_id: config.identity?.user_id ?? s.user_id,
      device_id: config.identity?.device_id ?? s.device_id,
      device_name: config.identity?.device_name ?? s.device_name,
    },
  };
}

/**
 * Calls `changed` (debounced) when `login.json` in the data directory is written, e.g. by `aios-device
 * login` in another process. The folder is watched, not the file: a login replaces the file by renaming.
 */
function watchLogin(dataDir: string, changed: () => Promise<void>, log: Logger): { close(): void } {
  let timer: NodeJS.Timeout | undefined;
  let running = Promise.resolve();
  try {
    const w = watch(dataDir, (_event, name) => {
      if (name !== LOGIN_FILE) return;
      clearTimeout(timer);
      timer = setTimeout(() => {
        running = running.then(changed).catch((e: unknown) => log.warn({ err: String(e) }, 'could not apply the new sign-in'));
      }, 200);
    });
    w.on('error', (e) => log.warn({ err: String(e) }, 'stopped watching for a new sign-in'));
    return {
      close() {
        clearTimeout(timer);
        w.close();
      },
    };
  } catch (e) {
    log.warn({ err: String(e) }, 'cannot watch for a new sign-in; restart the agent after signing in again');
    return { close: () => undefined };
  }
}
