/**
 * The "pause all calls" switch as the running agent holds it: the flag in the consent database
 * (`pause-state.ts`, which `aios-device pause` flips from another process), and who to tell when it
 * turns. A pause made elsewhere is noticed on the next call, and by a poll once `start()` runs it.
 */
import type { PauseInfo, PauseState } from './pause-state.js';

/** How often a started switch looks for a pause or resume made by another process (ms). */
export const PAUSE_POLL_MS = 1000;

/** Pauses and resumes calls, and tells its listeners when the state turns (whoever turned it). */
export class PauseSwitch {
  /** The state last seen; a change from it is announced. */
  private last: boolean;
  private poll: NodeJS.Timeout | undefined;
  private readonly listeners: ((paused: boolean) => void)[] = [];

  constructor(private readonly state: PauseState) {
    this.last = state.get().paused;
  }

  /** True while calls are paused; tells the listeners when that changed since the last look. */
  isPaused(): boolean {
    const paused = this.state.get().paused;
    if (paused !== this.last) {
      this.last = paused;
      for (const cb of this.listeners) cb(paused);
    }
    return paused;
  }

  /** Whether, since when and by whom. */
  info(): PauseInfo {
    return this.state.get();
  }

  /** Pauses all calls (new calls answer `paused`); `by` names who did it (cli, ui, tray). */
  pause(by: string): void {
    this.state.set(true, by);
    this.isPaused();
  }

  /** Resumes calls. */
  resume(): void {
    this.state.set(false, 'user');
    this.isPaused();
  }

  /** Called with the new state whenever it turns. */
  onChange(cb: (paused: boolean) => void): void {
    this.listeners.push(cb);
  }

  /** Starts looking every `pollMs` (0: never) for a pause or resume made by another process. */
  start(pollMs = PAUSE_POLL_MS): void {
    if (this.poll || pollMs <= 0) return;
    this.poll = setInterval(() => this.isPaused(), pollMs);
    this.poll.unref();
  }

  /** Stops the poll. */
  stop(): void {
    clearInterval(this.poll);
    this.poll = undefined;
  }
}
