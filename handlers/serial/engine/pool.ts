/**
 * The port pool: keeps a port open between calls for a few seconds (a scale asked every second is not
 * reopened each time), reopens it when a call needs other settings or the path now names another
 * device, closes it when idle, on pause and on shutdown, and hands it to one user at a time.
 */
import type { Binding } from './binding.js';
import { faultFromOsError, SerialFault } from './faults.js';
import { abortable, deviceIdentity, SerialLink } from './link.js';
import { openOptions, settingsKey, type ResolvedSettings } from './settings.js';

/** Default idle time before a pooled port is closed. */
export const DEFAULT_IDLE_CLOSE_MS = 5000;

interface Entry {
  link: SerialLink | undefined;
  /** Tail of the queue of users of this path (one at a time). */
  turn: Promise<void>;
  idle: NodeJS.Timeout | undefined;
}

/** What `acquire` hands out: the open link and how it was obtained. */
export interface Lease {
  readonly link: SerialLink;
  /** True when this call opened the port (false: reused from the pool). */
  readonly opened: boolean;
  /** Time spent waiting for the port and opening it (ms). */
  readonly openMs: number;
  /** Gives the port back to the pool (idempotent). */
  release(): void;
}

/** Options of the pool. */
export interface PoolOptions {
  binding: () => Promise<Binding>;
  idleCloseMs?: number;
}

/** Open ports by path. */
export class PortPool {
  private readonly entries = new Map<string, Entry>();
  private readonly idleMs: number;
  private closed = false;

  constructor(private readonly o: PoolOptions) {
    this.idleMs = o.idleCloseMs ?? DEFAULT_IDLE_CLOSE_MS;
  }

  /** Paths with an open port (for tests and status). */
  openPaths(): string[] {
    return [...this.entries].filter(([, e]) => e.link?.usable).map(([p]) => p);
  }

  /**
   * Waits for the path's turn, then returns an open port with these settings: the pooled one if it is
   * alive, has the same settings and the path still names the same device; otherwise a fresh one.
   */
  async acquire(path: string, settings: ResolvedSettings, signal: AbortSignal): Promise<Lease> {
    if (this.closed) throw new SerialFault('device_unavailable', 'io_error', 'The serial handler is shutting down.', true);
    const t0 = performance.now();
    const e = this.entry(path);
    let done!: () => void;
    const mine = new Promise<void>((r) => (done = r));
    const before = e.turn;
    e.turn = before.then(() => mine);
    let released = false;
    let holding = false;
    const release = () => {
      if (released) return;
      released = true;
      // Only the call that had its turn starts the idle clock: one that gave up waiting must not close the port under the call that has it.
      if (holding) this.scheduleIdle(e);
      done();
    };
    try {
      await abortable(before, signal);
      holding = true;
      if (e.idle) clearTimeout(e.idle);
      e.idle = undefined;
      const key = settingsKey(settings);
      let opened = false;
      const cur = e.link;
      let link = cur;
      if (!link || !link.usable || link.settingsKey !== key || link.identity !== deviceIdentity(path)) {
        e.link = undefined;
        if (cur) await cur.close();
        link = e.link = await this.open(path, settings, key, signal);
        opened = true;
      }
      return { link, opened, openMs: performance.now() - t0, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Closes every pooled port now (pause, shutdown); ports in use are closed under their call. */
  async closeAll(): Promise<void> {
    const links: SerialLink[] = [];
    for (const e of this.entries.values()) {
      if (e.idle) clearTimeout(e.idle);
      e.idle = undefined;
      if (e.link) links.push(e.link);
      e.link = undefined;
    }
    await Promise.all(links.map((l) => l.close()));
  }

  /** Closes everything and refuses new work. */
  async dispose(): Promise<void> {
    this.closed = true;
    await this.closeAll();
  }

  private entry(path: string): Entry {
    let e = this.entries.get(path);
    if (!e) {
      e = { link: undefined, turn: Promise.resolve(), idle: undefined };
      this.entries.set(path, e);
    }
    return e;
  }

  private async open(path: string, settings: ResolvedSettings, key: string, signal: AbortSignal): Promise<SerialLink> {
    const binding = await this.o.binding();
    const opening = binding.open(openOptions(path, settings)).then(
      (port) => new SerialLink(port, path, key),
      (e: unknown) => {
        throw faultFromOsError(e, path, 'open');
      },
    );
    // An open that completes after the caller gave up is closed, not leaked.
    return abortable(opening, signal, () => void opening.then((l) => l.close(), () => undefined));
  }

  private scheduleIdle(e: Entry): void {
    if (e.idle) clearTimeout(e.idle);
    e.idle = undefined;
    if (!e.link) return;
    if (!e.link.usable || this.closed) {
      const l = e.link;
      e.link = undefined;
      void l.close();
      return;
    }
    e.idle = setTimeout(() => {
      e.idle = undefined;
      const l = e.link;
      e.link = undefined;
      if (l) void l.close();
    }, this.idleMs);
    e.idle.unref();
  }
}
