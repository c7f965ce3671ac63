/**
 * What `control.status` answers about consent (pause, providers, prompts waiting), and the
 * `control/notification.status` the tray and the window get whenever any of it changes.
 */
import { CONTROL_EVENTS, type ControlEvents } from './control-events.js';
import type { PauseSwitch } from './pause-switch.js';
import type { PromptQueue } from './prompt-queue.js';
import type { ProviderChoice } from './prompt-providers.js';

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

/** The parts the status is read from. */
export interface ConsentStatusParts {
  events: ControlEvents;
  pause: Pick<PauseSwitch, 'info'>;
  queue: Pick<PromptQueue, 'providerName' | 'size'>;
  choice: ProviderChoice;
  sessionId: string;
}

/** Reads the consent status and announces its changes. */
export class ConsentStatusBoard {
  private handlerStatus: (() => Record<string, Record<string, unknown>>) | undefined;

  constructor(private readonly parts: ConsentStatusParts) {}

  /** Pause state, providers and the number of prompts waiting. */
  status(): ConsentStatus {
    const { pause, queue, choice, sessionId } = this.parts;
    const p = pause.info();
    const h = this.handlerStatus?.();
    return {
      paused: p.paused,
      paused_since: p.since,
      paused_by: p.by,
      provider: choice,
      active_provider: queue.providerName(),
      prompts_waiting: queue.size(),
      session_id: sessionId,
      ...(h && Object.keys(h).length ? { handlers: h } : {}),
    };
  }

  /** Where `status()` reads the handlers' entries from (the agent's host services). */
  setHandlerStatus(source: () => Record<string, Record<string, unknown>>): void {
    this.handlerStatus = source;
  }

  /** Tells status listeners (tray, window) that something in `status()` changed. */
  changed(): void {
    this.parts.events.emit(CONTROL_EVENTS.status, this.status());
  }
}
