/**
 * The `ui` provider: prompts go to the tray / local web UI through the control API. Showing a prompt
 * broadcasts `control/notification.prompt`; the UI answers with `control.prompts.answer`; a prompt that
 * ends any other way broadcasts `control/notification.prompt_withdrawn` so every open window closes it.
 * A desktop notification says a prompt is waiting unless the UI said it is in front.
 */
import type { PromptAnswer, PromptProvider, PromptView } from '../prompt.js';
import { CONTROL_EVENTS, type ControlEvents } from '../control-events.js';

interface Open {
  view: PromptView;
  resolve(a: PromptAnswer | 'closed'): void;
}

/** How often an attached answerer must send `control.prompts.heartbeat`. */
export const ANSWERER_HEARTBEAT_MS = 2000;
/** An answerer whose heartbeat stops counts as gone this long after its last beat. */
export const ANSWERER_LAPSE_MS = 3 * ANSWERER_HEARTBEAT_MS;

interface Answerer {
  name: string;
  lastBeat: number;
  /** Fires when the presence lapses, so the status (active_provider) is told at once. */
  timer: NodeJS.Timeout | undefined;
}

/** UI prompt provider. */
export class UiPromptProvider implements PromptProvider {
  readonly name = 'ui' as const;
  private readonly open = new Map<string, Open>();
  private readonly answerers = new Map<string, Answerer>();
  private focused = false;
  private nextId = 1;
  /** Called when an answerer comes, goes or lapses. */
  onPresenceChange: () => void = () => {};

  constructor(
    private readonly events: ControlEvents,
    private readonly notify: (view: PromptView) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * True while an answerer is attached (`control.prompts.attach`) and its heartbeat is recent. Nothing
   * else counts: a monitoring script's `control.status` never makes prompts go to nobody.
   */
  available(): boolean {
    const now = this.now();
    for (const a of this.answerers.values()) if (now - a.lastBeat < ANSWERER_LAPSE_MS) return true;
    return false;
  }

  /** Attaches an answerer; `onClose` (its connection's) detaches it when the connection ends. */
  attach(name: string, onClose?: (cb: () => void) => void): { answerer_id: string; heartbeat_ms: number; lapse_ms: number } {
    const id = `ans_${this.nextId++}`;
    const a: Answerer = { name, lastBeat: this.now(), timer: undefined };
    this.answerers.set(id, a);
    this.arm(id, a);
    onClose?.(() => this.detach(id));
    this.onPresenceChange();
    return { answerer_id: id, heartbeat_ms: ANSWERER_HEARTBEAT_MS, lapse_ms: ANSWERER_LAPSE_MS };
  }

  /** Keeps an answerer present; false when it is unknown (lapsed or detached: attach again). */
  heartbeat(id: string): boolean {
    const a = this.answerers.get(id);
    if (!a || this.now() - a.lastBeat >= ANSWERER_LAPSE_MS) {
      if (a) this.detach(id);
      return false;
    }
    a.lastBeat = this.now();
    this.arm(id, a);
    return true;
  }

  /** Ends an answerer's presence at once; false when it was not attached. */
  detach(id: string): boolean {
    const a = this.answerers.get(id);
    if (!a) return false;
    clearTimeout(a.timer);
    this.answerers.delete(id);
    this.onPresenceChange();
    return true;
  }

  /** The answerers attached now (for status). */
  attached(): { answerer_id: string; name: string }[] {
    const now = this.now();
    return [...this.answerers].filter(([, a]) => now - a.lastBeat < ANSWERER_LAPSE_MS).map(([answerer_id, a]) => ({ answerer_id, name: a.name }));
  }

  /** Forgets every answerer and stops their timers (the service is closing). */
  close(): void {
    for (const a of this.answerers.values()) clearTimeout(a.timer);
    this.answerers.clear();
  }

  /** Detaches an answerer once its heartbeat is overdue. */
  private arm(id: string, a: Answerer): void {
    clearTimeout(a.timer);
    a.timer = setTimeout(() => {
      if (this.answerers.get(id) === a && this.now() - a.lastBeat >= ANSWERER_LAPSE_MS) this.detach(id);
      else if (this.answerers.get(id) === a) this.arm(id, a);
    }, ANSWERER_LAPSE_MS);
    a.timer.unref();
  }

  /** The UI reports whether it is in front; no desktop notification is needed while it is. */
  setFocused(focused: boolean): void {
    this.focused = focused;
  }

  show(view: PromptView, _args: Record<string, unknown>, signal: AbortSignal): Promise<PromptAnswer | 'closed'> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve('closed');
      const finish = (a: PromptAnswer | 'closed', reason: string): void => {
        if (!this.open.delete(view.prompt_id)) return;
        signal.removeEventListener('abort', onAbort);
        this.events.emit(CONTROL_EVENTS.promptWithdrawn, { prompt_id: view.prompt_id, call_id: view.call_id, reason });
        resolve(a);
      };
      const onAbort = (): void => finish('closed', signal.reason === 'timeout' ? 'timeout' : 'cancelled');
      signal.addEventListener('abort', onAbort, { once: true });
      this.open.set(view.prompt_id, {
        view,
        resolve: (a) => finish(a, a === 'closed' ? 'closed' : 'answered'),
      });
      this.events.emit(CONTROL_EVENTS.prompt, view);
      if (!this.focused) this.notify(view);
    });
  }

  /** Answers the prompt on screen; false when no such prompt is showing. */
  answer(promptId: string, a: PromptAnswer | 'closed'): boolean {
    const o = this.open.get(promptId);
    if (!o) return false;
    o.resolve(a);
    return true;
  }
}
