/**
 * The consent service: the dispatcher's ConsentGate (policy, prompts, pause) and CallObserver (audit
 * trail), over the consent database in the data directory.
 */
import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import type { ConsentDecision, ConsentGate, ConsentRequest, CallObserver } from '../seams/call-seams.js';
import type { ConfirmationInfo } from '../protocol/messages.js';
import { WireError } from '../protocol/errors.js';
import type { Message } from '../i18n/catalogue.js';
import type { Logger } from '../base/logger.js';
import { openConsentDb, type Db } from './db.js';
import { watchChanges } from '../storage/sqlite.js';
import { DecisionsStore } from './decisions-store.js';
import { PauseState, type PauseInfo } from './pause-state.js';
import { AuditLog, DEFAULT_AUDIT_RETENTION_DAYS, type FinishedCall } from './audit-log.js';
import { inThreadWriter, WorkerAuditWriter } from './audit-writer.js';
import { decidePolicy, type AdminPolicy, type PolicyVerdict } from './policy.js';
import { PromptQueue } from './prompt-queue.js';
import type { PromptProvider, PromptResult, PromptView } from './prompt.js';
import { TtyPromptProvider, type TtyInput } from './providers/tty.js';
import { UiPromptProvider } from './providers/ui.js';
import { CONTROL_EVENTS, ControlEvents } from './control-events.js';
import { notifyPromptWaiting } from './notify.js';
import { localeFromEnv, type Locale } from '../i18n/index.js';

/** `confirmations.provider`. */
export type ProviderChoice = 'auto' | 'ui' | 'tty' | 'none';

/** The config sections the service reads (PROTOCOL.md §11, snake_case as in the file). */
export interface ConsentConfig {
  data_dir: string;
  confirmations?: { provider?: ProviderChoice; timeout_ms?: number };
  policy?: AdminPolicy;
  functions?: { disabled?: string[] };
}

/** Wiring that is not configuration. */
export interface ConsentServiceOptions {
  log?: Logger;
  /** Terminal for the tty provider (default process.stdin / process.stdout). */
  tty?: { input: TtyInput; output: Writable };
  /** The language of the terminal prompt and the desktop notice (default: from the environment). */
  locale?: Locale;
  /** Desktop notification when a UI prompt is waiting (default node-notifier). */
  notify?: (view: PromptView) => void;
  /** Identifies this agent run; `session`-scoped decisions last as long as it. */
  sessionId?: string;
  auditRetentionDays?: number;
  /** Commit audit rows in a worker thread (the agent); default: in this thread. */
  auditInWorker?: boolean;
  /** How often to look for a pause/resume made by another process (ms; 0 = never). Default 1000. */
  pausePollMs?: number;
  /**
   * Whether a call that names no checked resources (`ConsentRequest.resources` absent) is on a granted
   * resource; default: never (such a `medium` call asks).
   */
  isResourceGranted?: (functionId: string, resource: string) => boolean;
  /**
   * Whether a function is off (the config's `functions.disabled` and the user's Settings, live);
   * default: the config's list alone.
   */
  isDisabled?: (functionId: string) => boolean;
}

/** What `status()` and `control.status` answer. */
export interface ConsentStatus {
  paused: boolean;
  paused_since: string | null;
  paused_by: string | null;
  provider: ProviderChoice;
  /** The provider a prompt would use now (`none` when no prompt can be shown). */
  active_provider: 'ui' | 'tty' | 'none';
  prompts_waiting: number;
  session_id: string;
  /** Built-in handlers' own entries (e.g. `media`: captures running, capture page attached), when any. */
  handlers?: Record<string, Record<string, unknown>>;
}

const DEFAULT_CONFIRM_TIMEOUT_MS = 60_000;
/** How many prompted calls keep their sentence for the activity list. */
const SENTENCES_KEPT = 500;

const info = (c: ConfirmationInfo): ConfirmationInfo => c;
/** Shared by every call that needed no confirmation (outcomes are never changed after they are built). */
const NOT_REQUIRED: ConfirmationInfo = Object.freeze(info({ required: false, decision: 'not_required', decided_by: 'policy', remembered: false }));
const DENIED_MESSAGES = {
  paused: 'The user has paused all calls on this device.',
  permission_denied: 'This function is not allowed on this device for this resource.',
  user_rejected: 'The user declined this call earlier and asked to remember that.',
} as const;

/** The consent gate, prompt queue, pause switch and audit trail of one agent. */
export class ConsentService implements ConsentGate, CallObserver {
  readonly events = new ControlEvents();
  readonly db: Db;
  readonly decisions: DecisionsStore;
  readonly audit: AuditLog;
  readonly queue: PromptQueue;
  readonly ui: UiPromptProvider;
  readonly sessionId: string;
  private readonly pauseState: PauseState;
  private readonly tty: TtyPromptProvider;
  private readonly choice: ProviderChoice;
  private readonly timeoutMs: number;
  private readonly policy: AdminPolicy;
  private readonly disabled: (functionId: string) => boolean;
  private readonly granted: (functionId: string, resource: string) => boolean;
  private readonly log: Logger | undefined;
  /** The prompt sentences of recent calls, for the activity list; in memory only (never in the audit). */
  private readonly sentences = new Map<string, { sentence: string; message?: Message }>();
  private lastPaused: boolean;
  private poll: NodeJS.Timeout | undefined;
  private readonly unwatch: () => void;

  constructor(config: ConsentConfig, opts: ConsentServiceOptions = {}) {
    this.log = opts.log;
    this.sessionId = opts.sessionId ?? randomUUID();
    this.choice = config.confirmations?.provider ?? 'auto';
    if (!['auto', 'ui', 'tty', 'none'].includes(this.choice)) {
      throw new Error(`confirmations.provider: must be auto, ui, tty or none, not "${String(this.choice)}".`);
    }
    this.timeoutMs = config.confirmations?.timeout_ms ?? DEFAULT_CONFIRM_TIMEOUT_MS;
    this.policy = config.policy ?? {};
    const configured = new Set(config.functions?.disabled ?? []);
    this.disabled = opts.isDisabled ?? ((id) => configured.has(id));
    this.granted = opts.isResourceGranted ?? (() => false);

    this.db = openConsentDb(config.data_dir);
    this.decisions = new DecisionsStore(this.db, this.sessionId);
    this.decisions.dropStaleSessions();
    const inThread = inThreadWriter(this.db);
    const writer = opts.auditInWorker ? new WorkerAuditWriter(this.db.name, inThread, (m) => this.log?.warn({}, m)) : inThread;
    this.audit = new AuditLog(this.db, opts.auditRetentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS, undefined, writer, (e) =>
      this.log?.warn({ err: String(e) }, 'audit rows could not be written; retrying'),
    );
    this.audit.prune();
    this.pauseState = new PauseState(this.db);
    this.lastPaused = this.pauseState.get().paused;
    // Every call reads decisions and the pause flag: watch the files instead of asking SQLite each turn.
    this.unwatch = watchChanges(this.db);

    const locale = opts.locale ?? localeFromEnv();
    const notify = opts.notify ?? ((v: PromptView) => notifyPromptWaiting(v, this.log, locale));
    this.ui = new UiPromptProvider(this.events, notify);
    this.ui.onPresenceChange = () => this.emitStatus();
    this.tty = new TtyPromptProvider(opts.tty?.input, opts.tty?.output, locale);
    this.queue = new PromptQueue(() => this.provider(), () => this.emitStatus());

    const pollMs = opts.pausePollMs ?? 1000;
    if (pollMs > 0) {
      this.poll = setInterval(() => this.isPaused(), pollMs);
      this.poll.unref();
    }
  }

  /** The provider a prompt shown now would use; undefined when none can show one. */
  provider(): PromptProvider | undefined {
    switch (this.choice) {
      case 'ui': return this.ui;
      case 'tty': return this.tty;
      case 'none': return undefined;
      default:
        if (this.ui.available()) return this.ui;
        if (this.tty.available()) return this.tty;
        return undefined;
    }
  }

  private verdict(req: ConsentRequest): PolicyVerdict {
    const d = req.descriptor;
    const rs = req.resources;
    // Checked resources (the dispatcher refused the call before consent if one was outside every
    // grant): granted when there is at least one and a grant covers each.
    const granted = rs ? rs.length > 0 && rs.every((r) => r.granted) : undefined;
    return decidePolicy({
      descriptor: d,
      resource: req.resource,
      adminPolicy: this.policy,
      remembered: this.decisions.lookup(req.userId, d.id, req.resource),
      isResourceGranted: (f, r) => granted ?? this.granted(f, r),
      askAlways: rs?.some((r) => r.ask === 'always') ?? false,
      paused: this.isPaused(),
    });
  }

  /** True when a call like this would wait for the user now (nobody can decide it at once). */
  needsPrompt(req: ConsentRequest): boolean {
    return this.decideNow(req) === undefined;
  }

  decideNow(req: ConsentRequest): ConsentDecision | undefined {
    const v = this.verdict(req);
    if (v.action !== 'ask') return this.settled(v);
    return this.provider() ? undefined : this.unavailable();
  }

  /** The decision for a verdict that needs nobody to be asked. */
  private settled(v: Exclude<PolicyVerdict, { action: 'ask' }>): ConsentDecision {
    if (v.action === 'allow') {
      return {
        confirmation: v.required
          ? info({ required: true, decision: 'allowed', decided_by: v.by, remembered: v.by === 'remembered' })
          : NOT_REQUIRED,
      };
    }
    return {
      confirmation: info({ required: v.required, decision: 'denied', decided_by: v.by, remembered: v.by === 'remembered' }),
      error: new WireError(v.error, DENIED_MESSAGES[v.error]),
    };
  }

  async decide(req: ConsentRequest, signal: AbortSignal): Promise<ConsentDecision> {
    const v = this.verdict(req);
    if (v.action !== 'ask') return this.settled(v);
    if (signal.aborted) return this.withdrawn();
    if (!this.provider()) return this.unavailable();

    const timeoutMs = req.timeoutMs > 0 ? req.timeoutMs : this.timeoutMs;
    const now = Date.now();
    const view: PromptView = {
      prompt_id: randomUUID(),
      call_id: req.callId,
      function_id: req.descriptor.id,
      function_name: req.descriptor.name,
      sentence: req.summary,
      ...(req.titleKey ? { title_key: req.titleKey } : {}),
      ...(req.said ? { sentence_message: req.said } : {}),
      ...(req.ownWords ? { sentence_own_words: true } : {}),
      requester: req.requester ?? null,
      runtime: req.runtime ?? null,
      workspace_id: req.workspaceId,
      user_id: req.userId,
      permission_level: req.descriptor.permission_level,
      risk: req.descriptor.risk ?? null,
      resource: req.resource,
      resources: (req.resources ?? []).map((r) => ({ kind: r.kind, id: r.id, ...(r.label !== undefined ? { label: r.label } : {}) })),
      // "Any" (remember for every resource of this function) is offered only when the call names resources.
      remember_any: v.rememberable && (req.resources?.length ?? 0) > 0,
      rememberable: v.rememberable,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + timeoutMs).toISOString(),
    };
    this.rememberSentence(req.callId, { sentence: req.summary, ...(req.said ? { message: req.said } : {}) });
    const r = await this.queue.ask(view, req.args, timeoutMs, signal);
    const decision = this.fromPrompt(r, req, v.rememberable, view.remember_any);
    this.log?.info(
      { call_id: req.callId, function: req.descriptor.id, decision: decision.confirmation.decision, remembered: decision.confirmation.remembered },
      'consent decided by prompt',
    );
    return decision;
  }

  private fromPrompt(r: PromptResult, req: ConsentRequest, rememberable: boolean, anyOffered: boolean): ConsentDecision {
    switch (r.kind) {
      case 'withdrawn': return this.withdrawn();
      case 'unavailable': return this.unavailable();
      case 'timeout':
        return {
          confirmation: info({ required: true, decision: 'timeout', decided_by: 'system', remembered: false }),
          error: new WireError('confirmation_timeout', 'Nobody answered the confirmation prompt in time.'),
        };
      case 'closed':
        return {
          confirmation: info({ required: true, decision: 'denied', decided_by: 'user', remembered: false }),
          error: new WireError('user_rejected', 'The user closed the confirmation prompt without allowing the call.'),
        };
      case 'answer': {
        const a = r.answer.answer;
        const remember = rememberable && (a === 'allow_remember' || a === 'deny_remember');
        const allow = a === 'allow_once' || a === 'allow_remember';
        if (remember) {
          this.decisions.remember({
            userId: req.userId,
            functionId: req.descriptor.id,
            // The resources the prompt showed; every resource only when the user chose "any".
            resource: anyOffered && r.answer.resource_scope === 'any' ? '*' : req.resource,
            effect: allow ? 'allow' : 'deny',
            scope: r.answer.scope ?? 'session',
          });
        }
        const confirmation = info({ required: true, decision: allow ? 'allowed' : 'denied', decided_by: 'user', remembered: remember });
        return allow
          ? { confirmation }
          : { confirmation, error: new WireError('user_rejected', 'The user declined this call.') };
      }
    }
  }

  private withdrawn(): ConsentDecision {
    return {
      confirmation: info({ required: true, decision: 'withdrawn', decided_by: 'system', remembered: false }),
      error: new WireError('cancelled', 'The call was cancelled while waiting for confirmation.', { sideEffects: 'none' }),
    };
  }

  private unavailable(): ConsentDecision {
    return {
      confirmation: info({ required: true, decision: 'unavailable', decided_by: 'system', remembered: false }),
      error: new WireError('confirmation_unavailable', 'This call needs the user to confirm it, and no prompt can be shown.'),
    };
  }

  /** The sentence the prompt of a call showed, while it is among the last SENTENCES_KEPT prompted calls. */
  sentenceOf(callId: string): string | undefined {
    return this.sentences.get(callId)?.sentence;
  }

  /** The same sentence as a catalogue message (absent for an adapter's own words). */
  sentenceMessageOf(callId: string): Message | undefined {
    return this.sentences.get(callId)?.message;
  }

  private rememberSentence(callId: string, sentence: { sentence: string; message?: Message }): void {
    this.sentences.set(callId, sentence);
    if (this.sentences.size > SENTENCES_KEPT) this.sentences.delete(this.sentences.keys().next().value!);
  }

  isPaused(): boolean {
    const paused = this.pauseState.get().paused;
    if (paused !== this.lastPaused) {
      this.lastPaused = paused;
      this.emitStatus();
    }
    return paused;
  }

  isDisabled(functionId: string): boolean {
    return this.disabled(functionId);
  }

  onFinished(entry: FinishedCall): void {
    try {
      this.audit.record(entry);
      // No argument summary here: the audit row has it, and `args` is a redacted log field anyway.
      this.log?.debug({ call_id: entry.outcome.call_id, function: entry.outcome.function, state: entry.outcome.state }, 'call audited');
    } catch (e) {
      this.log?.error({ err: (e as Error).message }, 'could not write the audit trail');
    }
  }

  /** Pauses all calls (new calls answer `paused`); `by` names who did it. */
  pause(by = 'user'): ConsentStatus {
    this.pauseState.set(true, by);
    this.isPaused();
    return this.status();
  }

  /** Resumes calls. */
  resume(): ConsentStatus {
    this.pauseState.set(false, 'user');
    this.isPaused();
    return this.status();
  }

  /** Pause state, providers and the number of prompts waiting. */
  status(): ConsentStatus {
    const p: PauseInfo = this.pauseState.get();
    return {
      paused: p.paused,
      paused_since: p.since,
      paused_by: p.by,
      provider: this.choice,
      active_provider: this.provider()?.name ?? 'none',
      prompts_waiting: this.queue?.size() ?? 0,
      session_id: this.sessionId,
      ...this.handlerStatusEntry(),
    };
  }

  private handlerStatus: (() => Record<string, Record<string, unknown>>) | undefined;

  /** Where `status()` reads the handlers' entries from (the agent's host services). */
  setHandlerStatus(source: () => Record<string, Record<string, unknown>>): void {
    this.handlerStatus = source;
  }

  /** Tells status listeners (tray, UI) that something in `status()` changed outside consent. */
  statusChanged(): void {
    this.emitStatus();
  }

  private handlerStatusEntry(): { handlers?: Record<string, Record<string, unknown>> } {
    const h = this.handlerStatus?.();
    return h && Object.keys(h).length ? { handlers: h } : {};
  }

  private emitStatus(): void {
    if (!this.queue) return;
    this.events.emit(CONTROL_EVENTS.status, this.status());
  }

  /** Stops the pause poll and closes the database. Prompts still open are left to their calls' signals. */
  close(): void {
    if (this.poll) clearInterval(this.poll);
    this.poll = undefined;
    this.ui.onPresenceChange = () => {};
    this.ui.close();
    this.unwatch();
    if (this.db.open) this.audit.close();
    if (this.db.open) this.db.close();
  }
}
