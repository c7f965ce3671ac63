/**
 * The headless device agent: wires config, journal, registry, handlers, consent, dispatcher and the
 * bridge session together. Plain Node; the tray shell and the CLI both drive this class.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { AgentConfig } from '../config/agent-config.js';
import { WireError } from '../protocol/errors.js';
import { CLIENT_PROTOCOL_VERSION, METHODS, type HelloParams, type Outcome, type ToolsChanged } from '../protocol/messages.js';
import { NO_GRANTS, type BlobClient, type HandlerEnv } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';
import { ConfigError } from '../config/load.js';
import { bridgeUrls, configPathResolver } from '../config/agent-config.js';
import type { GrantStore } from '../grants/grant-store.js';
import type { FunctionSwitches } from './function-switches.js';
import { APP_VERSION } from '../version.js';
import { TempArea } from '../sdk/temp.js';
import { coreMessage, localeFromEnv, type Locale } from '../i18n/index.js';
import { SaidError } from '../i18n/said.js';
import { Dispatcher } from './dispatcher.js';
import { Outbox } from './outbox.js';
import { builtinHandlerNames, loadHandlers, type HandlerLoadResult } from './handlers-loader.js';
import { HostServicesHub } from './host-services.js';
import { Journal } from './journal.js';
import { FunctionRegistry } from './registry.js';
import type { CallObserver, ConsentGate } from '../seams/call-seams.js';
import { DeviceSession, type BridgeStatus, type FatalStop, type SessionMethod } from './session.js';
import { writeJsonFileSync } from '../base/json-file.js';
import { stopAdvice, type SignInKind, type StopAdvice } from './stop-advice.js';
import { ensurePrivateDir } from '../storage/private-dir.js';
import { publishedDescriptors } from '../discovery/skill-index.js';
import { ADAPTER_ID_PATTERN } from '../protocol/manifest-schemas.js';

const ADAPTER_ID = new RegExp(ADAPTER_ID_PATTERN);
/** How long stop() waits for the handlers' dispose hooks. */
const HOOK_BUDGET_MS = 5000;

/** Where the agent gets its bridge token. */
export interface TokenProvider {
  getAccessToken(): Promise<string>;
  /** Refreshes after `unauthorized`; true when a new token is available. */
  onUnauthorized?(): Promise<boolean>;
}

/**
 * What an agent is built with. The consent gate, the live grants and the function switches are built
 * by the composition root (src/app/start-agent.ts) and shared with the control API: the agent never
 * builds its own.
 */
export interface AgentOptions {
  log: Logger;
  /** Decides each call (src/consent/gate.ts, built in src/app/consent-parts.ts). */
  consent: ConsentGate;
  observers?: CallObserver[];
  tokens?: TokenProvider;
  blobs?: BlobClient;
  /** Extra request methods served over the bridge session (e.g. the registry's). */
  methods?: Record<string, SessionMethod>;
  /** Signed Adapter Card for hello, if discovery is wired. */
  adapterCard?: () => Record<string, unknown> | undefined;
  /** Shortened backoff for tests. */
  backoff?: { baseMs: number; capMs: number; resetAfterMs: number };
  /** Handler folders to load (default: every built-in one). */
  handlers?: string[];
  /** The language of prompt sentences (default: from the environment, LANG and friends). */
  locale?: Locale;
  /** Where the handler folders are (default: the built-in handlers/ of this install). */
  handlersDir?: string;
  /** The live grants (shared with the control methods). */
  grants: GrantStore;
  /** Functions on and off (shared with the consent gate and control.functions.*). */
  functions: FunctionSwitches;
}

/** A blob client used until one is configured: every transfer is refused clearly. */
const noBlobs: BlobClient = {
  uploadFile: async () => {
    throw new WireError('device_unavailable', 'Blob transfer is not configured on this device.');
  },
  downloadToFile: async () => {
    throw new WireError('device_unavailable', 'Blob transfer is not configured on this device.');
  },
};

/** Reads the bridge token named by the config (token or token_file). */
export function configTokenProvider(cfg: AgentConfig): TokenProvider {
  return {
    async getAccessToken() {
      if (cfg.bridge?.token) return cfg.bridge.token;
      if (cfg.bridge?.token_file) {
        const t = readFileSync(cfg.bridge.token_file, 'utf8').trim();
        if (!t) throw new Error(`the token file ${cfg.bridge.token_file} is empty`);
        return t;
      }
      throw new Error('no bridge token: set bridge.token_file in the config, or sign in with `aios-device login`');
    },
  };
}

/** The device agent. */
/** What an Agent tells its owners (the CLI's wiring, the tray): any number of listeners. */
export interface AgentEvents {
  /** The bridge connection changed state. */
  status: [BridgeStatus];
  /** The session gave up for good (outdated client, replaced, unauthorized). */
  fatal: [FatalStop];
  /** A new sign-in was stored while running: `reconnecting` when it was picked up, else why not (for the console). */
  signin: [{ reconnecting: boolean; message: string }];
}

export class Agent extends EventEmitter<AgentEvents> {
  readonly registry: FunctionRegistry;
  /** True for a function `functions.disabled` turns off: it is published nowhere and answers unknown_function. */
  readonly isDisabled: (functionId: string) => boolean;
  /** The live grants: config, user changes, the kinds the built-in handlers declared. */
  readonly grants: GrantStore;
  /** Functions on and off: the config's `functions.disabled` (ceiling) and the user's Settings. */
  readonly functions: FunctionSwitches;
  readonly journal: Journal;
  readonly dispatcher: Dispatcher;
  /** Outcome delivery: the response when a session is up, else `call.report` after the next hello (§6.8). */
  readonly outbox: Outbox;
  readonly session: DeviceSession | undefined;
  readonly identity: { workspaceId: string; userId: string; deviceId: string; deviceName: string };
  handlerResults: HandlerLoadResult[] = [];
  /** Where the bridge token comes from (says what to do after a fatal stop); set by whoever wires the tokens. */
  signInKind: SignInKind = 'config';
  /** What built-in handlers contribute to the local endpoint and the status. */
  readonly hostServices: HostServicesHub;
  /** Calls' private temp files (ctx.tempFile/tempDir), under the data dir; swept at start-up. */
  readonly temp: TempArea;
  private paused = false;
  private sweepTimer: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;
  private readonly log: Logger;

  constructor(readonly config: AgentConfig, private readonly opts: AgentOptions) {
    super();
    const missing = (['consent', 'grants', 'functions'] as const).filter((k) => !(opts as Partial<AgentOptions>)[k]);
    if (missing.length) throw new TypeError(`an Agent is built with ${missing.join(', ')} passed in (see src/app/start-agent.ts); it builds none of its own`);
    this.log = opts.log;
    this.hostServices = new HostServicesHub(opts.log.child({ component: 'host-services' }));
    const id = config.identity ?? {};
    if (!id.workspace_id || !id.user_id || !id.device_id) {
      throw new SaidError(coreMessage('core.config.identity_required'));
    }
    this.identity = { workspaceId: id.workspace_id, userId: id.user_id, deviceId: id.device_id, deviceName: id.device_name ?? hostname() };
    ensurePrivateDir(config.data_dir);
    this.grants = opts.grants;
    const sync = config.journal?.synchronous === 'full' ? 'FULL' : 'NORMAL';
    this.journal = new Journal(join(config.data_dir, 'journal.sqlite'), { workspaceId: this.identity.workspaceId, deviceId: this.identity.deviceId }, sync);
    this.registry = new FunctionRegistry({ get: (k) => this.journal.metaGet(k), set: (k, v) => this.journal.metaSet(k, v) });
    this.functions = opts.functions;
    const consent = opts.consent;
    this.isDisabled = (id) => consent.isDisabled(id);
    // Off is published nowhere: a switch flipped in Settings is announced like a removed (or added) function.
    this.registry.hidden = this.isDisabled;
    this.functions.on('change', (c) => this.registry.setPublished(c.id, c.enabled));
    this.temp = new TempArea(join(config.data_dir, 'tmp', 'calls'));
    this.outbox = new Outbox({ store: this.journal, log: this.log });
    this.dispatcher = new Dispatcher({
      temp: this.temp,
      locale: opts.locale ?? localeFromEnv(),
      identity: this.identity,
      registry: this.registry,
      grants: this.grants,
      // Built-in handlers (loaded by `load()`) see the grants; third-party adapters do not.
      seesGrants: (source) => this.handlerResults.some((r) => r.name === source),
      journal: this.journal,
      consent,
      observers: opts.observers ?? [],
      blobs: opts.blobs ?? noBlobs,
      log: this.log,
      maxConcurrentCalls: config.limits.max_concurrent_calls,
      dedupeRetentionS: config.limits.dedupe_retention_s,
      defaultConfirmTimeoutMs: config.confirmations.timeout_ms,
      maxOutputBytes: config.limits.max_message_bytes - 4096,
      notify: (m, p) => this.session?.notify(m, p),
      outbox: this.outbox,
      coalesceNotes: () => this.session?.coalescesNotes ?? false,
    });
    this.journal.batchHint = () => this.dispatcher.activeCount > 1;
    this.journal.onCheckpointError = (e) => this.log.error({ err: String(e) }, 'the journal table could not be updated; its rows stay in the journal log and will be retried');
    const urls = bridgeUrls(config);
    if (urls.length) {
      const tokens = opts.tokens ?? configTokenProvider(config);
      this.session = new DeviceSession({
        urls,
        token: () => tokens.getAccessToken(),
        ...(tokens.onUnauthorized ? { refreshToken: () => tokens.onUnauthorized!() } : {}),
        hello: () => this.hello(),
        dispatcher: this.dispatcher,
        outbox: this.outbox,
        log: this.log,
        maxMessageBytes: config.limits.max_message_bytes,
        methods: {
          [METHODS.functionList]: () => ({ functions: publishedDescriptors(this.registry.descriptors(), { authenticated: true, disabled: this.isDisabled }), revision: this.registry.revision }),
          ...(opts.methods ?? {}),
        },
        onStatus: (s) => this.emit('status', s),
        onFatal: (f) => this.emit('fatal', f),
        ...(opts.backoff ? { backoff: opts.backoff } : {}),
      });
    }
    this.registry.on('changed', (c: ToolsChanged) => this.session?.notify(METHODS.toolsChanged, c));
  }


  /** Recovers the journal, loads handlers, connects. */
  async start(): Promise<void> {
    await this.load();
    this.connect();
  }

  /** Recovers the journal and loads the built-in handlers (no connection yet). */
  async load(): Promise<void> {
    const recovered = this.journal.recover();
    if (recovered.length) this.log.warn({ count: recovered.length }, 'recovered calls interrupted by a previous stop; none will re-run');
    // A kill left these calls without an audit row: the trail gets one now, as the bridge gets the outcome.
    for (const outcome of recovered) this.observeRecovered(outcome);
    this.journal.sweep(this.config.limits.dedupe_retention_s);
    this.sweepTimer = setInterval(() => this.journal.sweep(this.config.limits.dedupe_retention_s), 3600_000);
    this.sweepTimer.unref();
    // Nothing runs yet: whatever is in the calls' temp folder was left by a crash or a hung handler.
    this.temp.sweep();
    const names = this.opts.handlers ?? this.config.adapters?.builtin ?? builtinHandlerNames(this.opts.handlersDir);
    this.handlerResults = await loadHandlers(names, this.registry, (n) => this.handlerEnv(n), this.log, this.opts.handlersDir, {
      sink: this.grants,
      // Every kind is known now: a bad or unknown `grants.<kind>` refuses the start, naming the key.
      afterImport: () => {
        const problems = this.grants.configure(this.config.grants, { resolvePath: configPathResolver(this.config) });
        if (problems.length) throw new ConfigError(this.config.source, problems);
      },
    });
    this.registry.discardPending();
    this.registry.settle();
  }

  /** Hands a recovered outcome to the observers (audit, metrics); who asked and the arguments are not journalled. */
  private observeRecovered(outcome: Outcome): void {
    for (const obs of this.opts.observers ?? []) {
      try {
        obs.onFinished({ outcome, descriptor: undefined, args: undefined, requester: undefined, workspaceId: this.identity.workspaceId, userId: this.identity.userId });
      } catch (e) {
        this.log.error({ err: String(e) }, 'call observer failed');
      }
    }
  }

  /**
   * Connects to the bridge. What was registered before this is announced by hello (its revision), not
   * by tools_changed.
   */
  connect(): void {
    this.registry.discardPending();
    this.registry.settle();
    this.session?.start();
  }

  /** The `session.hello` params for the current state. */
  hello(): HelloParams {
    const card = this.opts.adapterCard?.();
    return {
      protocol_version: CLIENT_PROTOCOL_VERSION,
      client: { name: 'aios-device', version: APP_VERSION, platform: process.platform, arch: process.arch },
      device: { id: this.identity.deviceId, name: this.identity.deviceName },
      workspace_id: this.identity.workspaceId,
      user_id: this.identity.userId,
      functions_revision: this.registry.revision,
      ...(card ? { adapter_card: card } : {}),
      limits: {
        max_message_bytes: this.config.limits.max_message_bytes,
        max_concurrent_calls: this.config.limits.max_concurrent_calls,
        dedupe_retention_s: this.config.limits.dedupe_retention_s,
      },
    };
  }

  /** Writes `<data_dir>/endpoint.json` atomically (§11). */
  writeEndpointFile(info: { http?: string; socket?: string; configured_port_taken?: number }): string {
    const file = join(this.config.data_dir, 'endpoint.json');
    writeJsonFileSync(file, { pid: process.pid, ...info, version: APP_VERSION }, 0o600);
    return file;
  }

  /** Why the bridge session stopped for good and what to do, while it is stopped (status, /health, the tray). */
  stopped(): StopAdvice | undefined {
    const f = this.session?.fatal;
    return f ? stopAdvice(f, this.signInKind) : undefined;
  }

  /** Reconnect now (resume from sleep, network change). */
  reconnectNow(): void {
    this.session?.reconnectNow();
  }

  /**
   * Clean stop (§11): no new calls; running calls get their abort signal and up to 5 s; outcomes are
   * journalled (and reported if the bridge is still there); then the journal closes.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearInterval(this.sweepTimer);
      this.registry.discardPending();
      await this.dispatcher.shutdown();
      await this.disposeHandlers();
      await this.outbox.flush();
      this.session?.stop();
      this.journal.close();
      rmSync(join(this.config.data_dir, 'endpoint.json'), { force: true });
    })();
    return this.stopping;
  }

  /** Runs every loaded handler's `dispose` (bounded: a hook that hangs does not hold the stop up). */
  private async disposeHandlers(): Promise<void> {
    const all = Promise.all(this.handlerResults.map((r) => r.instance?.dispose()));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((r) => (timer = setTimeout(r, HOOK_BUDGET_MS)));
    await Promise.race([all, late]);
    clearTimeout(timer);
  }

  /**
   * Tells the dispatcher and the handlers the user paused or resumed calls (calls not started yet end
   * `paused`; `onPause` / `onResume`); repeated states are ignored, so it may be fed every status change.
   */
  async setPaused(paused: boolean): Promise<void> {
    if (paused === this.paused) return;
    this.paused = paused;
    // Calls that have not started yet end `paused` now (those waiting for a lock, a slot or an answer).
    if (paused) this.dispatcher.pauseWaiting();
    await Promise.all(this.handlerResults.map((r) => (paused ? r.instance?.pause() : r.instance?.resume())));
  }

  /**
   * The env a handler is created with. Built-in handlers (`withGrants`) get the user's grants and the
   * data directory; third-party adapters get neither: no grants, and a folder of their own.
   */
  handlerEnv(name: string, withGrants = true): HandlerEnv {
    // An adapter id names a folder under data_dir: one that is not a well-formed id never gets one.
    if (!withGrants && !ADAPTER_ID.test(name)) throw new Error(`"${name}" is not a valid adapter id`);
    const own = join(this.config.data_dir, 'adapter-data', name);
    if (!withGrants) mkdirSync(own, { recursive: true, mode: 0o700 });
    return {
      grants: withGrants ? this.grants : NO_GRANTS,
      options: (this.config.handlers?.[name] as Record<string, unknown> | undefined) ?? {},
      // Third-party code gets a folder of its own, never the agent's (local token, keys, journal).
      dataDir: withGrants ? this.config.data_dir : own,
      log: this.log.child({ handler: name }),
      appVersion: APP_VERSION,
      listFunctions: () => this.registry.ids(),
      ...(withGrants ? { host: this.hostServices.forHandler(name) } : {}),
    };
  }
}
