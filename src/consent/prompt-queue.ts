/**
 * One prompt at a time, in arrival order (an agent serves one user: the dispatcher refuses calls for any
 * other, so there is one screen and one queue). Each prompt has a deadline counted from when it was
 * queued (the call's confirm_timeout_ms bounds the whole wait, PROTOCOL.md §6.4); a cancelled call's
 * prompt is withdrawn at once, whether it is showing or still waiting its turn.
 */
import type { PromptProvider, PromptResult, PromptView } from './prompt.js';
import { setClampedTimeout } from '../base/timers.js';

interface Item {
  view: PromptView;
  args: Record<string, unknown>;
  /** Aborted when the item settles while showing, so the provider hides it. */
  showing: AbortController | undefined;
  settled: boolean;
  finish(r: PromptResult): void;
}

/** Snapshot of a prompt in the queue. */
export interface QueuedPrompt {
  view: PromptView;
  /** True for the prompt on screen; the others wait their turn. */
  active: boolean;
  position: number;
}

/** The FIFO prompt queue. */
export class PromptQueue {
  private readonly lane: Item[] = [];

  constructor(
    /** Picks the provider at the moment a prompt comes up (so `auto` follows the UI coming and going). */
    private readonly provider: () => PromptProvider | undefined,
    private readonly onChange: () => void = () => {},
  ) {}

  /**
   * Queues a prompt and resolves when it ends. `timeoutMs` runs from now; `signal` withdraws it.
   */
  ask(view: PromptView, args: Record<string, unknown>, timeoutMs: number, signal: AbortSignal): Promise<PromptResult> {
    if (signal.aborted) return Promise.resolve({ kind: 'withdrawn' });
    return new Promise<PromptResult>((resolve) => {
      const lane = this.lane;
      const onAbort = (): void => item.finish({ kind: 'withdrawn' });
      const timer = setClampedTimeout(() => item.finish({ kind: 'timeout' }), timeoutMs);
      const item: Item = {
        view,
        args,
        showing: undefined,
        settled: false,
        finish: (r) => {
          if (item.settled) return;
          item.settled = true;
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          const wasActive = lane[0] === item;
          const idx = lane.indexOf(item);
          if (idx >= 0) lane.splice(idx, 1);
          // Hide it first (providers clean up synchronously in their abort listener), then show the next.
          item.showing?.abort(r.kind);
          resolve(r);
          if (wasActive) this.pump();
          this.onChange();
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      lane.push(item);
      this.onChange();
      if (lane.length === 1) this.pump();
    });
  }

  /** All prompts, on screen first, then in queue order. */
  list(): QueuedPrompt[] {
    return this.lane.map((it, i) => ({ view: it.view, active: i === 0 && it.showing !== undefined, position: i }));
  }

  /** True when a prompt asked now could be shown (some provider can show it). */
  canShow(): boolean {
    return this.provider() !== undefined;
  }

  /** The provider a prompt asked now would use (`none` when none can show one). */
  providerName(): PromptProvider['name'] {
    return this.provider()?.name ?? 'none';
  }

  /** Number of prompts showing or waiting. */
  size(): number {
    return this.lane.length;
  }

  /** Arguments of a queued prompt, for "view full arguments" (local, authenticated callers only). */
  argumentsOf(promptId: string): Record<string, unknown> | undefined {
    return this.lane.find((it) => it.view.prompt_id === promptId)?.args;
  }

  private pump(): void {
    const item = this.lane[0];
    if (!item || item.showing) return;
    const provider = this.provider();
    if (!provider) {
      item.finish({ kind: 'unavailable' });
      return;
    }
    const ctrl = new AbortController();
    item.showing = ctrl;
    this.onChange();
    provider.show(item.view, item.args, ctrl.signal).then(
      (a) => item.finish(a === 'closed' ? { kind: 'closed' } : { kind: 'answer', answer: a }),
      () => item.finish({ kind: 'unavailable' }),
    );
  }
}
