/**
 * Consent, wired: opens the consent database and builds over it the gate, the prompt queue (with its
 * window and terminal providers), the pause switch and the audit trail, each a piece of its own from
 * src/consent/. Building starts nothing; `start()` starts the pause poll, the database watch, the audit
 * pruning and the clean-up of other runs' session decisions, and `close()` stops them.
 */
import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import type { Logger } from '../base/logger.js';
import { localeFromEnv, type Locale } from '../i18n/index.js';
import { watchChanges } from '../storage/sqlite.js';
import type { CallObserver } from '../seams/call-seams.js';
import { openConsentDb, type Db } from '../consent/db.js';
import { DecisionsStore } from '../consent/decisions-store.js';
import { PauseState } from '../consent/pause-state.js';
import { PauseSwitch, PAUSE_POLL_MS } from '../consent/pause-switch.js';
import { AuditLog, DEFAULT_AUDIT_RETENTION_DAYS } from '../consent/audit-log.js';
import { inThreadWriter, WorkerAuditWriter } from '../consent/audit-writer.js';
import { auditTrail } from '../consent/audit-trail.js';
import type { AdminPolicy } from '../consent/policy.js';
import { PromptQueue } from '../consent/prompt-queue.js';
import type { PromptView } from '../consent/prompt.js';
import { providerChoice, providerPicker, type ProviderChoice } from '../consent/prompt-providers.js';
import { TtyPromptProvider, type TtyInput } from '../consent/providers/tty.js';
import { UiPromptProvider } from '../consent/providers/ui.js';
import { ControlEvents } from '../consent/control-events.js';
import { notifyPromptWaiting } from '../consent/notify.js';
import { RecentSentences } from '../consent/recent-sentences.js';
import { ConsentStatusBoard, type ConsentStatus } from '../consent/consent-status.js';
import { DEFAULT_CONFIRM_TIMEOUT_MS, PolicyGate } from '../consent/gate.js';
import type { ConsentControls } from '../consent/control-api.js';

/** The config sections consent reads (PROTOCOL.md §11, snake_case as in the file). */
export interface ConsentConfig {
  data_dir: string;
  confirmations?: { provider?: ProviderChoice; timeout_ms?: number };
  policy?: AdminPolicy;
  functions?: { disabled?: string[] };
}

/** Wiring that is not configuration. */
export interface ConsentOptions {
  log?: Logger;
  /** Terminal for the tty provider (default process.stdin / process.stdout). */
  tty?: { input: TtyInput; output: Writable };
  /** The language of the terminal prompt and the desktop notice (default: from the environment). */
  locale?: Locale;
  /** Desktop notification when a window prompt is waiting (default node-notifier). */
  notify?: (view: PromptView) => void;
  /** Identifies this agent run; `session`-scoped decisions last as long as it. */
  sessionId?: string;
  auditRetentionDays?: number;
  /** Commit audit rows in a worker thread (the agent); default: in this thread. */
  auditInWorker?: boolean;
  /** Whether a call naming no checked resources is on a granted resource (see PolicyGateParts). */
  isResourceGranted?: (functionId: string, resource: string) => boolean;
  /** Whether a function is off (the user's Settings, live); default: the config's `functions.disabled`. */
  isDisabled?: (functionId: string) => boolean;
}

/** The consent pieces of one agent, and how to start and stop what runs in them. */
export interface Consent extends ConsentControls {
  readonly db: Db;
  readonly sessionId: string;
  /** The dispatcher's ConsentGate. */
  readonly gate: PolicyGate;
  /** The dispatcher's CallObserver that writes the audit trail. */
  readonly trail: CallObserver;
  readonly pauseSwitch: PauseSwitch;
  readonly queue: PromptQueue;
  readonly ui: UiPromptProvider;
  readonly decisions: DecisionsStore;
  readonly audit: AuditLog;
  readonly sentences: RecentSentences;
  /** `control.status`'s consent part, and its change notifications. */
  readonly board: ConsentStatusBoard;
  /** Starts the pause poll (every `pausePollMs`, 0 = never; default 1 s), the database watch and the clean-ups. */
  start(opts?: { pausePollMs?: number }): void;
  /** Stops what `start` started and closes the database. Prompts still open are left to their calls' signals. */
  close(): void;
}

/** Opens `<data_dir>/consent.sqlite` and builds the consent pieces over it; nothing runs until `start()`. */
export function openConsent(config: ConsentConfig, opts: ConsentOptions = {}): Consent {
  const choice = providerChoice(config.confirmations?.provider);
  const log = opts.log;
  const sessionId = opts.sessionId ?? randomUUID();
  const db = openConsentDb(config.data_dir);
  const events = new ControlEvents();
  const decisions = new DecisionsStore(db, sessionId);
  const inThread = inThreadWriter(db);
  const writer = opts.auditInWorker ? new WorkerAuditWriter(db.name, inThread, (m) => log?.warn({}, m)) : inThread;
  const audit = new AuditLog(db, opts.auditRetentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS, undefined, writer, (e) =>
    log?.warn({ err: String(e) }, 'audit rows could not be written; retrying'),
  );
  const pauseSwitch = new PauseSwitch(new PauseState(db));
  const locale = opts.locale ?? localeFromEnv();
  const ui = new UiPromptProvider(events, opts.notify ?? ((v) => notifyPromptWaiting(v, log, locale)));
  const tty = new TtyPromptProvider(opts.tty?.input, opts.tty?.output, locale);
  // Every change of what `status()` reads is announced: a pause, a window coming or going, the queue.
  const queue = new PromptQueue(providerPicker(choice, ui, tty), () => board.changed());
  const board = new ConsentStatusBoard({ events, pause: pauseSwitch, queue, choice, sessionId });
  ui.onPresenceChange = () => board.changed();
  pauseSwitch.onChange(() => board.changed());
  const sentences = new RecentSentences();
  const configured = new Set(config.functions?.disabled ?? []);
  const gate = new PolicyGate({
    policy: config.policy ?? {},
    timeoutMs: config.confirmations?.timeout_ms ?? DEFAULT_CONFIRM_TIMEOUT_MS,
    decisions,
    pause: pauseSwitch,
    queue,
    sentences,
    isDisabled: opts.isDisabled ?? ((id) => configured.has(id)),
    ...(opts.isResourceGranted ? { isResourceGranted: opts.isResourceGranted } : {}),
    ...(log ? { log } : {}),
  });
  let unwatch: (() => void) | undefined;
  const status = (): ConsentStatus => board.status();
  return {
    db, sessionId, gate, trail: auditTrail(audit, log), pauseSwitch, queue, ui, decisions, audit, sentences, board, events,
    status,
    pause: (by) => (pauseSwitch.pause(by), status()),
    resume: () => (pauseSwitch.resume(), status()),
    start({ pausePollMs = PAUSE_POLL_MS } = {}) {
      decisions.dropStaleSessions();
      audit.prune();
      // Every call reads decisions and the pause flag: watch the files instead of asking SQLite each turn.
      unwatch ??= watchChanges(db);
      pauseSwitch.start(pausePollMs);
    },
    close() {
      pauseSwitch.stop();
      ui.onPresenceChange = () => {};
      ui.close();
      unwatch?.();
      unwatch = undefined;
      if (db.open) audit.close();
      if (db.open) db.close();
    },
  };
}
