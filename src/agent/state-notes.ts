/**
 * `aios/notification.call_state` notes (PROTOCOL.md §6.2). On a 1.0 session every transition is sent
 * when it happens, the terminal one included (as 1.0 clients always did). On a 1.1 session:
 * - a non-terminal note waits for the end of the current window (at most NOTE_WINDOW_MS; one shared
 *   flush per window, not a timer per call) and is replaced by a later state of the same call before it
 *   leaves, so a call that ends inside the window sends no note at all (invoke + response: two frames);
 * - `awaiting_confirmation` is sent when it is entered (the runtime shows that the user is being asked);
 * - the terminal state never travels in a note (the response carries it);
 * - `seq` counts the notes actually sent.
 * Time and the flush come from a `NoteClock`, so tests drive the window without waiting for it.
 */
import type { CallState, CallStateNote } from '../protocol/messages.js';

/** How long a non-terminal note may be held back on a 1.1 session (§6.2). */
export const NOTE_WINDOW_MS = 10;

/** Time and the window's flush; tests pass a manual one. */
export interface NoteClock {
  /** Now, in milliseconds (any origin, never going back). */
  now(): number;
  /** Runs `fn` once, at `atMs` on this clock (or as soon after as the event loop allows). */
  schedule(fn: () => void, atMs: number): void;
}

/** The real clock: `performance.now()` and an unref'd timer (a held note never keeps the process up). */
export const realNoteClock: NoteClock = {
  now: () => performance.now(),
  schedule: (fn, atMs) => void setTimeout(fn, Math.max(0, atMs - performance.now())).unref(),
};

/** A call as its notes see it (the dispatcher's in-flight call carries these fields). */
export interface NoteSubject {
  readonly callId: string;
  /** The next note's `seq`. */
  seq: number;
  /** True once an `accepted` note went out (1.0: a call that ends unannounced sends it before its end). */
  announced: boolean;
  /** The state whose note waits for the window's end (1.1), and when it was entered. */
  held: CallState | undefined;
  heldAt: string | undefined;
}

/** What the notes need from the agent. */
export interface StateNotesOptions {
  send(note: CallStateNote): void;
  /** True while the bridge session speaks 1.1 or later (held notes, no terminal note). */
  coalesce(): boolean;
  clock?: NoteClock;
}

/** The state notes of every call of one dispatcher. */
export class StateNotes {
  private readonly clock: NoteClock;
  /** Calls holding a note in the current window (one may appear twice; it is sent once). */
  private window: NoteSubject[] = [];
  /** When the current window ends, while one is open. */
  private windowEnd: number | undefined;

  constructor(private readonly o: StateNotesOptions) {
    this.clock = o.clock ?? realNoteClock;
  }

  /** The call entered a non-terminal `state` at `at`. */
  enter(c: NoteSubject, state: CallState, at: string): void {
    if (state === 'accepted') c.announced = true;
    if (state === 'awaiting_confirmation' || !this.o.coalesce()) {
      c.held = undefined; // superseded: the state sent now is later
      this.send(c, state, at);
      return;
    }
    if (c.held === undefined) this.window.push(c);
    c.held = state;
    c.heldAt = at;
    if (this.windowEnd === undefined) {
      this.windowEnd = this.clock.now() + NOTE_WINDOW_MS;
      this.clock.schedule(() => this.flush(), this.windowEnd);
    }
  }

  /** The call ended in `state` at `at`: on 1.1 its held note is dropped; on 1.0 the terminal note goes out. */
  end(c: NoteSubject, state: CallState, at: string, acceptedAt: string): void {
    c.held = undefined;
    if (this.o.coalesce()) return;
    if (!c.announced) this.enter(c, 'accepted', acceptedAt);
    this.send(c, state, at);
  }

  /** The window's end: every note still held goes out. */
  private flush(): void {
    this.windowEnd = undefined;
    const w = this.window;
    this.window = [];
    for (const c of w) {
      const state = c.held;
      if (state === undefined) continue;
      c.held = undefined;
      this.send(c, state, c.heldAt!);
    }
  }

  private send(c: NoteSubject, state: CallState, at: string): void {
    this.o.send({ call_id: c.callId, state, seq: c.seq++, at });
  }
}
