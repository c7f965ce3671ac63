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

/** How long a UI counts as attached after its last authenticated control call. */
export const UI_PRESENCE_MS = 60_000;

/** UI prompt provider. */
export class UiPromptProvider implements PromptProvider {
  readonly name = 'ui' as const;
  private readonly open = new Map<string, Open>();
  private lastSeen = -Infinity;
  private present: boolean | undefined;
  private focused = false;

  constructor(
    private readonly events: ControlEvents,
    private readonly notify: (view: PromptView) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  private connections = 0;
  private readonly seen = new WeakSet<object>();

  /**
   * Attached when the endpoint says so (`setPresent`); else while a UI that made a control call over
   * `WS /rpc` stays connected, or when one made a control call over HTTP in the last minute.
   */
  available(): boolean {
    if (this.present !== undefined) return this.present;
    return this.connections > 0 || this.now() - this.lastSeen < UI_PRESENCE_MS;
  }

  /**
   * Counts a WebSocket connection as an attached UI until it closes. `conn` identifies the connection
   * (the endpoint's per-connection notify function) so repeated calls count once.
   */
  attach(conn: object, onClose: (cb: () => void) => void): void {
    if (this.seen.has(conn)) return;
    this.seen.add(conn);
    this.connections++;
    onClose(() => {
      this.connections--;
    });
  }

  /** Records an authenticated control call (a sign that a UI is attached). */
  touch(): void {
    this.lastSeen = this.now();
  }

  /** Lets the local endpoint say for certain whether a UI is connected (undefined = use `touch`). */
  setPresent(present: boolean | undefined): void {
    this.present = present;
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
