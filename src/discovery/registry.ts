/**
 * The adapter catalogue (PROTOCOL.md §7.3): built-in handlers, local third-party adapters, remote adapters
 * and `.desktop` inferences in one list; the functions of loaded third-party adapters; change events. Its
 * remote adapters are kept by remote-store.ts, its `aios/registry.*` methods served by registry-rpc.ts.
 */
import { EventEmitter } from 'node:events';
import { chmod, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROTOCOL_VERSION, type PermissionLevel, type ToolsChanged } from '../protocol/messages.js';
import { NO_GRANTS, type DescriptorInput, type FunctionDefinition, type HandlerEnv } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';
import type { RpcMethod } from '../protocol/rpc-methods.js';
import { defaultAdapterDirs, LOOSE_MANIFEST_REASON, scanAdapterDirs, selectByPriority, type AdapterCandidate } from './adapter-scanner.js';
import { DEVICE_CAPABILITIES } from './card.js';
import { AdapterWatcher, COALESCE_MS } from './adapter-watcher.js';
import { boundFiles, sha256Tag } from './code-binding.js';
import { defaultDesktopDirs, scanDesktopEntries, type DesktopEntry } from './desktop-entries.js';
import { prepareLocalAdapter, softwareInstalled, unavailableBecause, type AdapterStatus } from './local-adapter.js';
import type { AdapterApprovals } from './adapter-approvals.js';
import { AdapterProblem, problem, renderProblem, type ProblemMessage } from './adapter-problem.js';
import type { AdapterCard, CardSkill } from '../protocol/manifest-schemas.js';
import type { RefreshScope } from './registry-methods.js';
import type { TrustStore } from './trust-store.js';
import { silentLogger } from '../base/logger.js';
import { hash, type AdapterEntry, type AdapterKind, type PendingAdapter, type RegistryChange } from './adapter-entry.js';
import { RemoteAdapterStore } from './remote-store.js';
import { RegistryRpc, type RegistryCatalogue } from './registry-rpc.js';

/** Local adapters checked and started at once by one scan (each may start a sandboxed process). */
const LOCAL_STARTS_AT_ONCE = 4;

/** Constructor options. */
export interface AdapterRegistryOptions {
  /** Adapters directories in priority order (default: the platform's user then system directory). */
  dirs?: string[];
  /** `.desktop` directories (default: the XDG ones; none on macOS/Windows). */
  desktopDirs?: string[];
  /** Loads unsigned local adapters, with a visible warning. */
  developerMode?: boolean;
  /** MCP adapters start without bubblewrap where it cannot run (admin config `adapters.unsandboxed: allow`). */
  allowUnsandboxed?: boolean;
  /** The level chosen for a third-party function when `approvals` is not given; default `high`. */
  chosenLevel?: (adapterId: string, fn: string) => PermissionLevel | undefined;
  /**
   * Local adapters wait for approval unless these approve them (the admin config, then the person's
   * `adapter-approvals.json`), and run at the levels chosen there. Without them every adapter that verifies runs.
   */
  approvals?: AdapterApprovals;
  trust: TrustStore;
  log?: Logger;
  /** The env a third-party handler is created with (default: no grants, no options). */
  handlerEnv?: (adapterId: string) => HandlerEnv;
  /**
   * Why an adapter's functions cannot be registered with the agent (its function registry's descriptor
   * check), or undefined when they can; such an adapter is listed unavailable with that reason.
   */
  checkFunctions?: (fns: readonly FunctionDefinition<never, unknown>[]) => string | undefined;
  /** Agent data directory: default home of handler data and of `remote-adapters.json`. */
  dataDir?: string;
  /** Where remote adapter URLs persist (default `<dataDir>/remote-adapters.json`). */
  remoteStoreFile?: string;
  /** Extra CA (PEM) trusted for remote adapters. */
  remoteCa?: string | Buffer;
  /** List installed applications without an adapter as inferred entries (default true). */
  inferFromDesktop?: boolean;
  /** Watch the directories (default true). */
  watch?: boolean;
  coalesceMs?: number;
}

/** A local adapter's fingerprint: what a user would notice, and `inputs`: new code behind the same descriptors is still an update the agent must pick up. */
function localFingerprint(card: AdapterEntry['card'], status: AdapterStatus, fns: readonly FunctionDefinition<never, unknown>[], inputs: string | undefined): string {
  return hash({ card, status, fns: fns.map((f) => f.descriptor), inputs });
}

/**
 * The registry. Emits `'changed'` (RegistryChange) after every scan that changed something, and when a
 * running adapter's functions changed.
 */
export class AdapterRegistry extends EventEmitter implements RegistryCatalogue {
  private readonly opts: AdapterRegistryOptions;
  private readonly log: Logger;
  private readonly dirs: string[];
  private readonly desktopDirs: string[];
  private entries = new Map<string, AdapterEntry>();
  private readonly builtins = new Map<string, AdapterEntry>();
  private desktop = new Map<string, DesktopEntry>();
  private watcher: AdapterWatcher | undefined;
  /** Scans and the application of their results, one at a time (remote ones are fetched before, outside it). */
  private chain: Promise<unknown> = Promise.resolve();
  /** Fires at `stop()`: remote fetches in flight are abandoned. */
  private readonly stopping = new AbortController();
  /** The remote adapters: their stored list, and their entries fetched in turn. */
  private readonly remote: RemoteAdapterStore;
  /** The `aios/registry.*` methods and their subscribers. */
  private readonly rpc = new RegistryRpc(this);

  constructor(opts: AdapterRegistryOptions) {
    super();
    this.opts = opts;
    this.log = (opts.log ?? silentLogger()).child({ component: 'adapters' });
    this.dirs = [...new Set(opts.dirs ?? defaultAdapterDirs())];
    this.desktopDirs = [...new Set(opts.desktopDirs ?? defaultDesktopDirs())];
    this.remote = new RemoteAdapterStore({
      file: opts.remoteStoreFile ?? join(opts.dataDir ?? tmpdir(), 'remote-adapters.json'),
      trust: opts.trust,
      ca: opts.remoteCa,
      signal: this.stopping.signal,
    });
  }

  /** Loose manifests already reported (each is said once, not at every rescan). */
  private readonly looseSeen = new Set<string>();

  private warnLoose(file: string): void {
    if (this.looseSeen.has(file)) return;
    this.looseSeen.add(file);
    this.log.warn({ file }, `not loaded: ${LOOSE_MANIFEST_REASON}`);
  }

  /** Lists a built-in handler as an adapter; its functions stay with the agent's own function registry. */
  addBuiltin(meta: { id: string; name: string; version: string; description?: string }, descriptors: readonly DescriptorInput[]): void {
    const card: Omit<AdapterCard, 'signature'> = {
      adapter: { ...meta, protocol_version: PROTOCOL_VERSION },
      // Built-in handlers run inside the agent: they can do what the device's own card says it can.
      capabilities: { ...DEVICE_CAPABILITIES },
      skills: descriptors.map((d) => ({ ...d })) as CardSkill[],
    };
    const status: AdapterStatus = { available: true, software_installed: true, software_running: true };
    const entry: AdapterEntry = { id: meta.id, kind: 'builtin', card, status, functions: [], source: { kind: 'builtin' }, fingerprint: hash({ card, status }) };
    this.builtins.set(meta.id, entry);
    this.entries.set(meta.id, entry);
  }

  /** Settles once the remote adapters known at start were fetched (or found unreachable). */
  remoteReady: Promise<void> = Promise.resolve();

  /**
   * Scans the local adapters, then watches the directories. Remote adapters are fetched in the
   * background (`remoteReady`): an unreachable one must not hold up the agent's start or its bridge
   * connection.
   */
  async start(): Promise<void> {
    await this.refresh('local');
    if (this.stopping.signal.aborted) return;
    this.remoteReady = this.refresh('remote').then(
      () => undefined,
      (e: unknown) => this.log.error({ reason: (e as Error).message }, 'remote adapters could not be refreshed'),
    );
    if (this.opts.watch === false) return;
    const roots = [...this.dirs, ...this.desktopDirs];
    this.watcher = new AdapterWatcher(roots, new Set(this.dirs), () => void this.refresh('local').catch((e: unknown) => this.log.error({ reason: (e as Error).message }, 'adapter rescan failed')), this.opts.coalesceMs ?? COALESCE_MS);
    this.watcher.start();
  }

  /** Stops watching, abandons remote fetches in flight, drops subscribers and waits for a scan in progress. */
  async stop(): Promise<void> {
    this.stopping.abort(new Error('the adapter registry is stopping'));
    this.watcher?.stop();
    this.watcher = undefined;
    this.rpc.close();
    await this.remote.idle();
    await this.chain.catch(() => undefined);
    await Promise.all([...this.entries.values()].map((e) => e.dispose?.()));
  }

  /** Every adapter, sorted by id. */
  listAdapters(): AdapterEntry[] {
    return [...this.entries.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** One adapter. */
  getAdapter(id: string): AdapterEntry | undefined {
    return this.entries.get(id);
  }

  /** Functions of loaded third-party adapters (local and remote), for the agent's function registry. */
  functions(): FunctionDefinition<never, unknown>[] {
    return this.listAdapters().flatMap((e) => (e.kind === 'builtin' ? [] : e.functions));
  }

  /**
   * Rescans; returns the adapter-level change. Scans are applied one at a time; remote cards are
   * fetched first, outside that queue (a local rescan does not wait for a slow origin).
   */
  refresh(scope: RefreshScope): Promise<RegistryChange['adapters']> {
    if (scope === 'local') return this.enqueue(async () => this.doRefresh(scope, await this.withTrustReloaded([])));
    return this.remote.refresh((remote) => this.enqueue(() => this.doRefresh(scope, remote)));
  }

  /** Picks up keys imported by another process (`keys import`) before a scan; passes `v` through. */
  private async withTrustReloaded<T>(v: T): Promise<T> {
    const added = await this.opts.trust.reloadImported();
    if (added.length) this.log.info({ kids: added }, 'newly imported signing keys are trusted');
    return v;
  }

  private enqueue<T>(step: () => Promise<T>): Promise<T> {
    const run = this.chain.then(step);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Fetches, verifies and registers a remote adapter, and remembers it. Throws RemoteAdapterError. */
  async addRemote(url: string, ca?: string): Promise<AdapterEntry> {
    const remote = await this.remote.fetch(url, ca);
    const id = remote.card.adapter.id;
    const clash = this.entries.get(id);
    if (clash && clash.kind !== 'remote') throw new AdapterProblem('core.adapter.id_taken', { id, kind: clash.kind });
    await this.remote.add(remote, ca);
    await this.refresh('remote');
    const entry = this.entries.get(id);
    if (!entry) throw new AdapterProblem('core.adapter.stored_stopping', { id });
    return entry;
  }

  /** Forgets a remote adapter. Returns false when it was not registered. */
  async removeRemote(id: string): Promise<boolean> {
    const removed = await this.remote.remove(id);
    if (removed) await this.refresh('remote');
    return removed;
  }

  /** Sends a tools_changed notification to the local subscribers of `aios/registry.subscribe` (registry-rpc.ts). */
  publish(params: ToolsChanged): void {
    this.rpc.publish(params);
  }

  /** The `aios/registry.*` methods, for the local endpoint (`addMethods`) and the bridge session. */
  registryMethods(): Record<string, RpcMethod> {
    return this.rpc.methods();
  }

  /** Why the person's approvals file cannot be used, when it cannot (only the admin config approves then). */
  approvalsProblem(): ProblemMessage | undefined {
    return this.opts.approvals?.problem;
  }

  /** Local adapters waiting for approval, by id. */
  pendingAdapters(): PendingAdapter[] {
    return this.listAdapters().flatMap((e) =>
      e.kind === 'local' && e.pending
        ? [{ id: e.id, name: e.card.adapter.name, version: e.card.adapter.version, folder: e.source.path ?? '', signer: e.pending.signer, functions: e.pending.functions }]
        : [],
    );
  }

  /**
   * A person approves a local adapter (waiting, or running under an earlier approval of theirs) with the
   * levels they chose; `rescan` (default true) loads it at once. Throws AdapterProblem when it cannot be
   * approved here: unknown or not local, approved by the admin config, a level for a function it does not
   * have, or an approvals file that cannot be used.
   */
  async approve(id: string, levels: Record<string, PermissionLevel>, opts: { rescan?: boolean } = {}): Promise<void> {
    const approvals = this.opts.approvals;
    const e = this.entries.get(id);
    if (approvals?.byAdmin(id)) throw new AdapterProblem('core.adapter.approved_by_admin', { id });
    if (!approvals || !e || e.kind !== 'local' || e.signer === undefined || (!e.pending && e.approval?.by !== 'user')) throw new AdapterProblem('core.adapter.not_pending', { id });
    // Its functions: those it waits with, those it runs, or (approved, but it failed to start) its card's skills;
    // an MCP server's are not known before it runs.
    const known = e.pending ? e.pending.functions?.map((f) => f.id) : e.status.available ? e.functions.map((f) => f.descriptor.id) : e.card.mcp ? null : e.card.skills.map((s) => s.id);
    for (const fn of Object.keys(levels)) {
      if (known && !known.includes(fn)) throw new AdapterProblem('core.adapter.level_unknown_function', { id, fn, fns: known.join(', ') || '-' });
    }
    await approvals.approve(id, e.signer, levels);
    this.log.info({ adapter: id, levels }, 'adapter approved');
    if (opts.rescan !== false) await this.refresh('local');
  }

  private codeDirReady: Promise<string> | undefined;

  /** The private folder adapters' checked code is copied into: `<dataDir>/adapter-code`, or a fresh temp folder. */
  private codeDir(): Promise<string> {
    this.codeDirReady ??= (async () => {
      if (!this.opts.dataDir) return mkdtemp(join(tmpdir(), 'aios-adapter-code-'));
      const dir = join(this.opts.dataDir, 'adapter-code');
      // Copies left by an earlier run are stale: every adapter is checked and copied afresh.
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await chmod(dir, 0o700);
      return dir;
    })();
    return this.codeDirReady;
  }

  private handlerEnv(id: string): HandlerEnv {
    if (this.opts.handlerEnv) return this.opts.handlerEnv(id);
    return {
      grants: NO_GRANTS,
      options: {},
      dataDir: join(this.opts.dataDir ?? tmpdir(), 'adapter-data', id),
      log: this.log.child({ adapter: id }),
      appVersion: '0.0.0',
      listFunctions: () => this.functions().map((f) => f.descriptor.id),
    };
  }

  private async localEntry(c: AdapterCandidate, previous: AdapterEntry | undefined): Promise<AdapterEntry> {
    const files: Record<string, string> = {};
    for (const f of await boundFiles(c.dir).catch(() => [] as string[])) {
      files[f] = sha256Tag(await readFile(join(c.dir, f)).catch(() => Buffer.alloc(0)));
    }
    const installed = await softwareInstalled(c.card, this.desktop);
    // The trusted keys are an input too: a key imported since the last scan may make a refused adapter load.
    const trusted = this.opts.trust.list().map((k) => k.kid).sort();
    const approvals = this.opts.approvals;
    // An approval given or taken back is an input too: the adapter starts, or stops, at the next scan.
    const approval = approvals?.inputsOf(c.id) ?? null;
    const inputs = hash({ raw: c.raw ?? c.card ?? null, error: c.error ?? null, files, installed, dev: this.opts.developerMode === true, dir: c.dir, trusted, approval });
    if (previous?.kind === 'local' && previous.inputs === inputs) return previous;
    const p = await prepareLocalAdapter(c, {
      trust: this.opts.trust,
      developerMode: this.opts.developerMode === true,
      desktop: this.desktop,
      env: () => this.handlerEnv(c.id),
      codeDir: () => this.codeDir(),
      allowUnsandboxed: this.opts.allowUnsandboxed === true,
      chosenLevel: (fn) => this.opts.chosenLevel?.(c.id, fn),
      ...(approvals && { approval: (signer: string | null) => approvals.decision(c.id, signer) }),
    });
    if (p.status.warning) this.log.warn({ adapter: c.id, dir: c.dir }, p.status.warning);
    if (p.pending) this.log.info({ adapter: c.id, dir: c.dir, signer: p.pending.signer }, 'new adapter waiting for approval');
    else if (!p.status.available) this.log.warn({ adapter: c.id, dir: c.dir, reason: p.status.reason }, 'adapter unavailable');
    const { signature: _s, ...card } = p.card ?? { adapter: { id: c.id, name: c.id, version: '0.0.0', protocol_version: PROTOCOL_VERSION }, capabilities: {}, skills: [] };
    const entry: AdapterEntry = { id: c.id, kind: 'local', card, status: p.status, functions: p.functions, source: { kind: 'local', path: c.dir }, fingerprint: '', inputs };
    if (p.dispose) entry.dispose = p.dispose;
    if (p.pending) entry.pending = p.pending;
    if (p.approval) entry.approval = p.approval;
    // Known once the signature verified (or the adapter loaded unsigned in developer mode): it waits, runs,
    // or was approved and failed to start.
    if (p.pending || p.status.available || p.approval) entry.signer = p.kid ?? null;
    const exe = card.requirements?.software?.detection?.executable;
    if (exe) entry.executable = exe;
    entry.fingerprint = localFingerprint(card, p.status, p.functions, inputs);
    // An MCP server's tools change while it runs (list_changed, or a restart that lists others).
    if (p.mcp) p.mcp.onChange = (fns) => void this.enqueue(async () => this.functionsChanged(c.id, p.dispose, fns)).catch((e: unknown) => this.log.error({ adapter: c.id, reason: (e as Error).message }, 'adapter tools could not be updated'));
    return entry;
  }

  /**
   * New functions of a running local adapter (its MCP server listed other tools), applied as a scan is (one
   * path, `commit`): clashes resolved, and an adapter refused for them lets its code go. Ignored once the
   * entry no longer holds this code (replaced, removed or refused since).
   */
  private functionsChanged(id: string, dispose: AdapterEntry['dispose'], fns: FunctionDefinition<never, unknown>[]): void {
    const cur = this.entries.get(id);
    if (this.stopping.signal.aborted || !cur || !dispose || cur.dispose !== dispose) return;
    const next = new Map(this.entries);
    next.set(id, { ...cur, functions: fns, fingerprint: localFingerprint(cur.card, cur.status, fns, cur.inputs) });
    const change = this.commit(next);
    this.log.info({ adapter: id, added: change.added.length, removed: change.removed.length, updated: change.updated.length }, 'adapter tools changed');
    // Announced even when no descriptor changed: the functions were swapped, and the agent takes the new ones.
    this.emit('changed', change);
  }

  private inferredEntries(taken: ReadonlySet<string>, claimed: ReadonlySet<string>): AdapterEntry[] {
    if (this.opts.inferFromDesktop === false) return [];
    const out: AdapterEntry[] = [];
    for (const d of this.desktop.values()) {
      if (d.hidden || claimed.has(d.file)) continue;
      const slug = d.file.replace(/\.desktop$/, '').toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '');
      const id = `desktop.${slug || 'app'}`;
      if (taken.has(id)) continue;
      const card = { adapter: { id, name: d.name, version: '0.0.0', protocol_version: PROTOCOL_VERSION, ...(d.comment && { description: d.comment }) }, capabilities: {}, skills: [] };
      const status: AdapterStatus = { available: false, software_installed: true, software_running: false, ...unavailableBecause(problem('core.adapter.inferred')) };
      const entry: AdapterEntry = { id, kind: 'inferred', card, status, functions: [], source: { kind: 'inferred', path: d.path }, fingerprint: hash({ card, status }) };
      const exe = (d.tryExec ?? d.exec)?.split(/\s+/)[0];
      if (exe) entry.executable = exe;
      out.push(entry);
    }
    return out;
  }

  /** Applies a scan; `remote` holds the remote entries already fetched (used unless the scope is local). */
  private async doRefresh(scope: RefreshScope, remote: AdapterEntry[]): Promise<RegistryChange['adapters']> {
    // After stop() nothing is applied: abandoned fetches would list every remote adapter as unavailable.
    if (this.stopping.signal.aborted) return { added: [], removed: [], updated: [] };
    const before = this.entries;
    const next = new Map<string, AdapterEntry>(this.builtins);
    const keep = (kinds: AdapterKind[]) => {
      for (const e of before.values()) if (kinds.includes(e.kind) && !next.has(e.id)) next.set(e.id, e);
    };
    if (scope === 'local' || scope === 'all') {
      this.desktop = await scanDesktopEntries(this.desktopDirs);
      if (this.opts.approvals) {
        const was = this.opts.approvals.problem;
        await this.opts.approvals.reload();
        const now = this.opts.approvals.problem;
        if (now && JSON.stringify(now) !== JSON.stringify(was)) this.log.error({ file: this.opts.approvals.file, reason: renderProblem(now, 'en') }, 'adapter approvals cannot be used: only the admin config approves adapters until the file is fixed');
      }
      const { selected, shadowed } = selectByPriority(await scanAdapterDirs(this.dirs, (file) => this.warnLoose(file)));
      for (const s of shadowed) this.log.debug({ adapter: s.id, dir: s.dir }, 'adapter description shadowed by a higher-priority one');
      // Each adapter is checked and started on its own (a sandboxed process each): a few at once, so that an
      // agent with several adapters is not as slow to come up as all their starts one after another; the
      // list keeps the scan's order.
      const todo = selected.filter((c) => !next.has(c.id));
      const prepared = new Array<AdapterEntry>(todo.length);
      let at = 0;
      const worker = async (): Promise<void> => {
        for (let i = at++; i < todo.length; i = at++) prepared[i] = await this.localEntry(todo[i]!, before.get(todo[i]!.id));
      };
      await Promise.all(Array.from({ length: Math.min(LOCAL_STARTS_AT_ONCE, todo.length) }, worker));
      for (const [i, c] of todo.entries()) next.set(c.id, prepared[i]!);
    } else keep(['local', 'inferred']);
    if (scope === 'remote' || scope === 'all') {
      for (const e of remote) if (!next.has(e.id)) next.set(e.id, e);
    } else keep(['remote']);
    if (scope === 'local' || scope === 'all') {
      const claimed = new Set<string>();
      for (const e of next.values()) {
        const f = e.card.requirements?.software?.detection?.desktop_file;
        if (f) claimed.add(f);
      }
      for (const e of this.inferredEntries(new Set(next.keys()), claimed)) next.set(e.id, e);
    }
    const change = this.commit(next);
    this.watcher?.resync();
    if (change.adapters.added.length || change.adapters.removed.length || change.adapters.updated.length) {
      this.log.info({ added: change.adapters.added.length, removed: change.adapters.removed.length, updated: change.adapters.updated.length }, 'adapters changed');
      this.emit('changed', change);
    }
    return change.adapters;
  }

  /**
   * Puts a new list in force, for a scan and for a running adapter's new functions alike: clashes resolved,
   * code that no entry holds any more released, and the change from the list before returned.
   */
  private commit(next: Map<string, AdapterEntry>): RegistryChange {
    const before = this.entries;
    const held = new Set([...before.values(), ...next.values()].map((e) => e.dispose));
    this.resolveClashes(next);
    this.entries = next;
    // Code no entry holds any more (replaced, removed, or refused for a clash) is told to let go.
    const live = new Set([...next.values()].map((e) => e.dispose));
    for (const dispose of held) if (dispose && !live.has(dispose)) void dispose();
    return diff(before, next);
  }

  /**
   * Adapters whose functions cannot be used are listed unavailable, with the reason: functions the
   * agent's registry would refuse, and a function id offered by two adapters (the earlier one, built-in,
   * then local, then remote, by id, keeps it).
   */
  private resolveClashes(next: Map<string, AdapterEntry>): void {
    const owner = new Map<string, string>();
    for (const b of this.builtins.values()) for (const s of b.card.skills) owner.set(s.id, b.id);
    const order: AdapterKind[] = ['local', 'remote'];
    const list = [...next.values()].filter((e) => order.includes(e.kind)).sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind) || (a.id < b.id ? -1 : 1));
    for (const e of list) {
      const taken = e.functions.find((f) => owner.has(f.descriptor.id));
      const refused = taken || !e.functions.length ? undefined : this.opts.checkFunctions?.(e.functions);
      if (taken || refused) {
        const reason = taken
          ? problem('core.adapter.already_provided', { skill: taken.descriptor.id, adapter: owner.get(taken.descriptor.id) ?? '?' })
          : problem('core.adapter.functions_refused', { detail: String(refused) });
        const status: AdapterStatus = { ...e.status, available: false, ...unavailableBecause(reason) };
        // Without its `inputs` the next scan builds it again: the clash may be gone by then. Its code is let go.
        const { inputs: _inputs, dispose: _dispose, ...rest } = e;
        next.set(e.id, { ...rest, status, functions: [], fingerprint: hash({ card: e.card, status }) });
        continue;
      }
      for (const f of e.functions) owner.set(f.descriptor.id, e.id);
    }
  }
}

function diff(before: ReadonlyMap<string, AdapterEntry>, after: ReadonlyMap<string, AdapterEntry>): RegistryChange {
  const ad: RegistryChange['adapters'] = { added: [], removed: [], updated: [] };
  for (const [id, e] of after) {
    const b = before.get(id);
    if (!b) ad.added.push({ id, name: e.card.adapter.name });
    else if (b.fingerprint !== e.fingerprint) ad.updated.push({ id, name: e.card.adapter.name });
  }
  for (const [id, b] of before) if (!after.has(id)) ad.removed.push({ id, name: b.card.adapter.name });
  const fns = (m: ReadonlyMap<string, AdapterEntry>) => {
    const out = new Map<string, { name: string; h: string }>();
    for (const e of m.values()) if (e.kind !== 'builtin') for (const f of e.functions) out.set(f.descriptor.id, { name: f.descriptor.name, h: hash(f.descriptor) });
    return out;
  };
  const fb = fns(before);
  const fa = fns(after);
  const change: RegistryChange = { added: [], removed: [], updated: [], adapters: ad };
  for (const [id, f] of fa) {
    const b = fb.get(id);
    if (!b) change.added.push({ id, name: f.name });
    else if (b.h !== f.h) change.updated.push({ id, name: f.name });
  }
  for (const [id, b] of fb) if (!fa.has(id)) change.removed.push({ id, name: b.name });
  return change;
}
