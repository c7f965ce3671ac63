/**
 * Reading a device's function list within the bridge's per-device bounds (config `device_limits`, issue 27):
 * one device must not be able to exhaust the bridge's memory or store. At most one read runs per session;
 * `tools_changed` notifications that arrive meanwhile coalesce into one more read. Past a bound the
 * session is closed with 4008 and `device_limits_exceeded` (PROTOCOL §2, −41063, `details.bound`).
 */
import type { DeviceLimits } from '../config/bridge-config.js';
import { ERRORS } from '../protocol/errors.js';
import { METHODS, type Descriptor, type FunctionListResult } from '../protocol/messages.js';
import type { Logger } from '../base/logger.js';
import type { DeviceConnection } from './device-hub.js';
import { TokenBucket } from './token-bucket.js';

/** A list may span at most this many pages (a fixed bound: every page is a round trip). */
export const MAX_LIST_PAGES = 100;

/** The bound a device went past (`details.bound`). */
export type DeviceBound = keyof DeviceLimits | 'max_pages';

/** The close reason a session gets when it goes past a bound: short JSON (a close reason holds 123 bytes). */
export function limitsCloseReason(bound: DeviceBound): string {
  return JSON.stringify({ type: 'device_limits_exceeded', code: ERRORS.device_limits_exceeded.code, details: { bound } });
}

interface SessionState {
  running?: Promise<void>;
  again: boolean;
  closed: boolean;
  /** The tools_changed bucket. */
  bucket: TokenBucket;
}

export interface FunctionListReaderOptions {
  limits: DeviceLimits;
  log: Logger;
  /** Keeps a whole list that stayed within the bounds. */
  save(c: DeviceConnection, functions: Descriptor[], revision: number): void;
  /** Closes the session: it went past `bound`; `message` says so in one English sentence. */
  exceeded(c: DeviceConnection, bound: DeviceBound, message: string): void;
}

/** Reads each session's function list, one read at a time, within `device_limits`. */
export class FunctionListReader {
  private readonly sessions = new WeakMap<DeviceConnection, SessionState>();
  /** Pages read, over all sessions (for tests and the bench). */
  pagesRead = 0;
  /** Whole-list reads started, over all sessions. */
  readsStarted = 0;

  constructor(private readonly o: FunctionListReaderOptions) {}

  private state(c: DeviceConnection): SessionState {
    let s = this.sessions.get(c);
    if (!s) {
      s = { again: false, closed: false, bucket: new TokenBucket(this.o.limits.tools_changed_per_s, this.burst) };
      this.sessions.set(c, s);
    }
    return s;
  }

  /** Ten seconds' worth of notifications, at least one. */
  private get burst(): number {
    return Math.max(1, Math.ceil(10 * this.o.limits.tools_changed_per_s));
  }

  /** A `tools_changed` arrived: read again (coalesced), or close the session when they come too fast. */
  toolsChanged(c: DeviceConnection, now = Date.now()): void {
    const s = this.state(c);
    if (s.closed) return;
    if (s.bucket.take(now) > 0) {
      this.exceed(c, s, 'tools_changed_per_s', `The device sent tools_changed more often than ${this.o.limits.tools_changed_per_s} per second.`);
      return;
    }
    void this.refresh(c);
  }

  /** Reads the whole list into the store; a read asked for while one runs makes one more read after it. */
  refresh(c: DeviceConnection): Promise<void> {
    const s = this.state(c);
    if (s.closed) return Promise.resolve();
    if (s.running) {
      s.again = true;
      return s.running;
    }
    s.running = (async () => {
      try {
        do {
          s.again = false;
          await this.readOnce(c, s);
        } while (s.again && !s.closed);
      } finally {
        s.running = undefined;
      }
    })();
    return s.running;
  }

  private async readOnce(c: DeviceConnection, s: SessionState): Promise<void> {
    const L = this.o.limits;
    this.readsStarted++;
    try {
      const all: Descriptor[] = [];
      let bytes = 0;
      let cursor: string | undefined;
      let revision = 0;
      for (let page = 0; ; page++) {
        if (page >= MAX_LIST_PAGES) return this.exceed(c, s, 'max_pages', `The device's function list spans more than ${MAX_LIST_PAGES} pages.`);
        const r = await c.peer.request<FunctionListResult>(METHODS.functionList, cursor ? { cursor } : {}, 10_000);
        this.pagesRead++;
        if (s.closed) return;
        const fns = Array.isArray(r.functions) ? r.functions : [];
        for (const f of fns) {
          const b = Buffer.byteLength(JSON.stringify(f));
          if (b > L.max_descriptor_bytes) return this.exceed(c, s, 'max_descriptor_bytes', `A descriptor of the device is ${b} bytes, over the bridge's ${L.max_descriptor_bytes}.`);
          bytes += b;
        }
        if (all.length + fns.length > L.max_functions) return this.exceed(c, s, 'max_functions', `The device's function list has more than ${L.max_functions} functions.`);
        if (bytes > L.max_list_bytes) return this.exceed(c, s, 'max_list_bytes', `The device's function list is over the bridge's ${L.max_list_bytes} bytes.`);
        all.push(...fns);
        revision = r.revision;
        if (!r.next_cursor) break;
        cursor = r.next_cursor;
      }
      this.o.save(c, all, revision);
    } catch (e) {
      this.o.log.warn({ device_id: c.identity.device_id, err: String(e) }, 'could not read the device\'s functions');
    }
  }

  private exceed(c: DeviceConnection, s: SessionState, bound: DeviceBound, message: string): void {
    if (s.closed) return;
    s.closed = true;
    s.again = false;
    this.o.log.warn({ workspace_id: c.identity.workspace_id, device_id: c.identity.device_id, bound }, 'device went past the bridge\'s device_limits; closing its session');
    this.o.exceeded(c, bound, message);
  }
}
