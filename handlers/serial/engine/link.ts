/**
 * One open port: keeps one OS read in flight for as long as it is open, hands chunks to the current
 * listener, keeps what arrives with nobody listening (or what a reader did not consume) for the next one
 * (bounded), and turns OS errors into faults. Reading all the time means an answer is picked up the moment
 * it arrives, dropping stale input costs no system call (tcflush would also drop unsent output), and an
 * unplugged device is noticed between calls.
 */
import fs from 'node:fs';
import type { BindingPort, SetFlags, StatusLines } from './binding.js';
import { faultFromOsError, SerialFault } from './faults.js';

/** Size of one read from the OS. */
const READ_CHUNK = 64 * 1024;
/** Bytes kept for the next listener when nobody listens (older ones are dropped and counted). */
const HELD_MAX = 64 * 1024;

/**
 * The Unix bindings' port (Linux, macOS): its descriptor, opened non-blocking, and its poller. Reading
 * and writing it directly spares each exchange the bindings' trips through libuv's thread pool (their
 * read and write are `fs.read`/`fs.write` there: one worker-thread wake-up and one main-thread wake-up
 * each, and an idle read that comes back EAGAIN costs another), which cost the whole path most on a busy
 * machine (docs/handlers/serial.md, "Benchmark").
 */
interface UnixPort {
  fd: number | null;
  poller: { once(event: 'readable', cb: (err?: Error | null) => void): unknown };
}

function unixPort(p: BindingPort): UnixPort | undefined {
  if (process.platform === 'win32') return undefined;
  const u = p as unknown as Partial<UnixPort>;
  return typeof u.fd === 'number' && typeof u.poller?.once === 'function' ? (u as UnixPort) : undefined;
}

const wouldBlock = (e: unknown): boolean => {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'EAGAIN' || code === 'EWOULDBLOCK' || code === 'EINTR';
};

/** Receives the port's bytes and its fatal fault while attached. */
export interface LinkListener {
  data(chunk: Buffer): void;
  fault(f: SerialFault): void;
}

/** The modem lines this agent last set (the OS cannot read DTR/RTS back). */
export interface SetLines {
  dtr: boolean;
  rts: boolean;
  brk: boolean;
}

/** An open port, owned by the pool. */
export class SerialLink {
  private listener: LinkListener | undefined;
  private reading = false;
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** Bytes dropped because nobody listened and the held buffer was full. */
  droppedBytes = 0;
  private fault: SerialFault | undefined;
  private closing: Promise<void> | undefined;
  /** Lines as last set (DTR and RTS are asserted by the OS on open). */
  readonly lines: SetLines = { dtr: true, rts: true, brk: false };
  /** The device file's identity when opened (Unix), to notice a path that now names another device. */
  readonly identity: string | undefined;
  /** When the port was opened (ms, performance clock). */
  readonly openedAt = performance.now();
  /** Set when the port's descriptor can be read and written directly (Unix bindings). */
  private readonly unix: UnixPort | undefined;
  /** The one buffer the OS reads into: one read is in flight at a time and its bytes are copied out. */
  private readonly readBuf = Buffer.allocUnsafe(READ_CHUNK);

  constructor(
    private readonly port: BindingPort,
    readonly path: string,
    /** The settings key this link was opened with (the pool reopens on a change). */
    readonly settingsKey: string,
  ) {
    this.identity = deviceIdentity(path);
    this.unix = unixPort(port);
    this.pump();
  }

  /** True while the port is open and has not failed. */
  get usable(): boolean {
    return !this.fault && !this.closing && this.port.isOpen;
  }

  /** The fault that ended this link, if any. */
  get failure(): SerialFault | undefined {
    return this.fault;
  }

  /**
   * Attaches the one listener; bytes held from before are delivered first (synchronously). Returns the
   * detach function. Detaching never cancels the OS read in flight: its bytes are held for the next one.
   */
  attach(l: LinkListener): () => void {
    if (this.listener) throw new Error('serial link already has a listener');
    if (this.fault) {
      l.fault(this.fault);
      return () => {};
    }
    this.listener = l;
    const held = this.takeHeld();
    if (held.length) l.data(held);
    return () => {
      if (this.listener === l) this.listener = undefined;
    };
  }

  /** Gives bytes back (a reader that stopped at a delimiter returns what followed it). */
  unread(chunk: Buffer): void {
    if (!chunk.length) return;
    this.held.unshift(chunk);
    this.heldBytes += chunk.length;
    this.trimHeld();
  }

  /** Drops every byte received so far (the read loop has taken them from the OS as they came). */
  discardInput(): void {
    this.held = [];
    this.heldBytes = 0;
  }

  /**
   * Writes all of `data`. On abort the wait ends at once and the link is closed (an OS write cannot be
   * taken back; a fresh open is the only clean state), so the next call reopens the port.
   */
  async write(data: Buffer, signal?: AbortSignal): Promise<void> {
    if (this.fault) throw this.fault;
    // What the OS takes at once (all of a request's few bytes, as a rule) is written here; the rest
    // through the bindings, which wait until the port is writable.
    let rest = data;
    if (this.unix?.fd != null) {
      try {
        rest = data.subarray(fs.writeSync(this.unix.fd, data));
      } catch (e) {
        if (!wouldBlock(e)) throw this.fail(faultFromOsError(e, this.path, 'io'));
      }
      if (!rest.length) return;
    }
    const w = this.port.write(rest).catch((e: unknown) => {
      if (isCanceled(e) && this.closing) return 'closed' as const;
      throw this.fail(faultFromOsError(e, this.path, 'io'));
    });
    if (!signal) {
      await w;
      return;
    }
    await abortable(w, signal, () => void this.close());
  }

  /** Sets DTR/RTS/BRK: the bindings set every line on each call, so the others keep their last value. */
  async setLines(change: Partial<SetLines>): Promise<SetLines> {
    const next = { ...this.lines, ...change };
    const flags: SetFlags = { dtr: next.dtr, rts: next.rts, brk: next.brk };
    try {
      await this.port.set(flags);
    } catch (e) {
      throw this.failUnlessLocal(faultFromOsError(e, this.path, 'signals'));
    }
    Object.assign(this.lines, next);
    return { ...this.lines };
  }

  /** Reads CTS/DSR/DCD. */
  async getLines(): Promise<StatusLines> {
    try {
      return await this.port.get();
    } catch (e) {
      throw this.failUnlessLocal(faultFromOsError(e, this.path, 'signals'));
    }
  }

  /** Closes the port; an in-flight read ends as cancelled and its bytes are dropped. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const l = this.listener;
      this.listener = undefined;
      // A reader still attached (pause or shutdown closed the port under it) must not wait for bytes that cannot come.
      l?.fault(this.fault ?? new SerialFault('device_unavailable', 'io_error', `${this.path} was closed because the agent paused or stopped.`, true));
      this.held = [];
      this.heldBytes = 0;
      if (this.port.isOpen) await this.port.close().catch(() => undefined);
    })();
    return this.closing;
  }

  /** Keeps one OS read in flight while the port is open. */
  private pump(): void {
    if (this.reading || !this.usable) return;
    this.reading = true;
    const buf = this.readBuf;
    (this.unix ? this.readDirect(this.unix, buf) : this.port.read(buf, 0, READ_CHUNK)).then(
      ({ bytesRead }) => {
        this.reading = false;
        if (this.closing) return;
        // A copy: the buffer is read into again by the next read, and a chunk outlives this one.
        const chunk = Buffer.from(buf.subarray(0, bytesRead));
        if (this.listener) this.listener.data(chunk);
        else this.hold(chunk);
        this.pump();
      },
      (e: unknown) => {
        this.reading = false;
        if (this.closing || isCanceled(e)) return;
        const f = this.fail(faultFromOsError(e, this.path, 'io'));
        this.listener?.fault(f);
      },
    );
  }

  /**
   * The bindings' read without the thread pool: read what is there now; when nothing is, wait for the
   * poller to say readable (a close cancels that wait with a `canceled` error, as the bindings' own read).
   */
  private readDirect(u: UnixPort, buf: Buffer): Promise<{ bytesRead: number }> {
    return new Promise((resolve, reject) => {
      const attempt = (err?: Error | null): void => {
        if (err) return reject(err);
        if (!this.port.isOpen || u.fd === null) return reject(Object.assign(new Error('Port is not open'), { canceled: true }));
        let n: number;
        try {
          n = fs.readSync(u.fd, buf, 0, buf.length, null);
        } catch (e) {
          if (wouldBlock(e)) {
            u.poller.once('readable', attempt);
            return;
          }
          return reject(e);
        }
        // Zero bytes: nothing after all (the bindings read again too); wait for the next readable.
        if (n === 0) u.poller.once('readable', attempt);
        else resolve({ bytesRead: n });
      };
      attempt();
    });
  }

  private hold(chunk: Buffer): void {
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    this.trimHeld();
  }

  private trimHeld(): void {
    while (this.heldBytes > HELD_MAX && this.held.length) {
      const first = this.held[0]!;
      const over = this.heldBytes - HELD_MAX;
      if (first.length <= over) {
        this.held.shift();
        this.heldBytes -= first.length;
        this.droppedBytes += first.length;
      } else {
        this.held[0] = first.subarray(over);
        this.heldBytes -= over;
        this.droppedBytes += over;
      }
    }
  }

  private takeHeld(): Buffer {
    const all = this.held.length === 1 ? this.held[0]! : Buffer.concat(this.held);
    this.held = [];
    this.heldBytes = 0;
    return all;
  }

  /** Marks the link dead for faults that mean the port is gone; the pool drops dead links. */
  private fail(f: SerialFault): SerialFault {
    if (f.type === 'device_unavailable' || f.type === 'permission_denied') {
      this.fault ??= f;
      void this.close();
    }
    return f;
  }

  /** Like fail(), but an unsupported ioctl or bad setting leaves the port open and usable. */
  private failUnlessLocal(f: SerialFault): SerialFault {
    return f.type === 'execution_failed' || f.type === 'invalid_arguments' ? f : this.fail(f);
  }
}

/** True for the bindings' "the port was closed under this operation" error. */
export function isCanceled(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { canceled?: unknown }).canceled === true;
}

/** dev:ino of what the path names now (Unix), or undefined (Windows, or gone). */
export function deviceIdentity(path: string): string | undefined {
  if (process.platform === 'win32') return undefined;
  try {
    const st = fs.statSync(path);
    return `${st.rdev}:${st.ino}`;
  } catch {
    return undefined;
  }
}

/** Races `p` against `signal`: rejects with the signal's reason at once; `onAbort` runs first. */
export function abortable<T>(p: Promise<T>, signal: AbortSignal, onAbort?: () => void): Promise<T> {
  if (signal.aborted) {
    onAbort?.();
    void p.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const stop = () => {
      onAbort?.();
      void p.catch(() => undefined);
      reject(signal.reason);
    };
    signal.addEventListener('abort', stop, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', stop);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', stop);
        reject(e);
      },
    );
  });
}
