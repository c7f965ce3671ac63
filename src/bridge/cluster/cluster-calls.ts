/**
 * The call path of a cluster node (issue 34): the same rules as the single process's `CallRouter`
 * (call-lifecycle.ts), with the records in PostgreSQL and the nodes meeting through the cluster bus.
 *
 * - **Submit, on any node**: the call is inserted (idempotent by the unique key `(workspace_id, call_id)`) and
 *   the node holding the device's session is told (`call`) in the same statement (`StoreOps.submitCall`), with
 *   the session row held until the commit, so the node told is the owner; a device on no node answers 409
 *   `device_offline`.
 * - **The owner** (the node holding the device's WebSocket) forwards the call, and writes what the device
 *   says (notes, the outcome, session events) in transactions fenced by its session's epoch: what a replaced
 *   session sends is refused, never written. Each write that changes what a stream shows tells every node
 *   `call_changed` (ids only; `sent` tells nobody).
 * - **Every node** holding a `wait` or an SSE stream for a call reads the record again on `call_changed` and
 *   turns what changed into the same events as the single process (`event:<ws>/<id>`, `settled:<ws>/<id>`),
 *   except the node that wrote it: it takes the record it saved (its `call_changed` names the write), unless
 *   it has read a record that came further meanwhile.
 *
 * - **Deadlines**: a timer on the node that sent the call (it asks the device to cancel first), and a sweeper on
 *   every node for the calls nobody ended (their owner died): `sweepDeadlines`.
 *
 * - **Progress**: the owner writes a call's latest progress note to its record (coalesced: while one write runs,
 *   newer notes replace each other and the latest is written next), and every node's streams send it on from
 *   the record like any other change.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from '../../base/logger.js';
import { setClampedTimeout } from '../../base/timers.js';
import { TurnBatch } from '../../base/turn-batch.js';
import { newCallId } from '../../protocol/call-id.js';
import { RPC, RpcError, WireError } from '../../protocol/errors.js';
import { argsDigest } from '../../protocol/hash.js';
import { attestsRuntime, isTerminal, METHODS, type CallStateNote, type Outcome, type ProgressNote } from '../../protocol/messages.js';
import { ConnectionClosedError, RequestTimeoutError } from '../../protocol/peer.js';
import {
  answers, applyOutcome, bridgeOutcome, deadlineOutcome, neverReceivedOutcome, CANCEL_WAIT_MS, idempotencyConflict, isNewNoteState, LATE_LISTEN_MS, newCall, offlineError, owns,
  resolvableUntil, RESOLVE_WINDOW_MS, takesSessionEvent, timeoutFor, untilVerdict, withoutRuntime,
  type CallEvent, type CallService, type SubmitRequest,
} from '../call-lifecycle.js';
import type { DeviceConnection, DeviceHub } from '../device-hub.js';
import { isStateEntry, type SessionEventName, type StoredCall } from '../store.js';
import type { AsyncBridgeStore, CallKey, FencedCallKey, SentMark, StoreOps } from '../store/async-store.js';
import { encodeMessage, type BusMessage, type CatchUpReason, type ClusterBus } from './bus.js';
import { StaleSessionError, type DeviceSessions } from './sessions.js';

/** Options of {@link ClusterCallRouter}. */
export interface ClusterCallRouterOptions {
  store: AsyncBridgeStore;
  bus: ClusterBus;
  hub: DeviceHub;
  sessions: DeviceSessions;
  log: Logger;
  /** The §6.8 resolution window (default RESOLVE_WINDOW_MS). */
  resolveWindowMs?: number;
  /** How often the deadline sweeper runs (default DEADLINE_SWEEP_MS; 0: never, a test calls `sweepDeadlines`). */
  deadlineSweepMs?: number;
  /** How long past a deadline the sweeper leaves a call to its owner's own timer (default DEADLINE_SWEEP_GRACE_MS). */
  deadlineGraceMs?: number;
}

/** How often every node sweeps for calls past their deadline that nobody ended. */
export const DEADLINE_SWEEP_MS = 5000;
/**
 * How long past its deadline a call is left to the node that sent it: that node asks the device to cancel and
 * waits CANCEL_WAIT_MS for the answer; the sweeper takes over only after that, plus a margin for a busy node.
 */
export const DEADLINE_SWEEP_GRACE_MS = CANCEL_WAIT_MS + 5000;
/** The longest wait between two tries at reconciling a device that came online while the store failed. */
const RECONCILE_RETRY_MAX_MS = 30_000;

/** The most reads, or `sent` marks, one statement of a node takes (a turn's; more wait for the next). */
const CALL_BATCH_MAX = 100;

/** Calls one sweep ends in one transaction at most (the next sweep takes the rest). */
const SWEEP_BATCH = 100;

/** A call this node streams or waits on: the last record it read, and its reads one after another. */
interface Watch {
  workspaceId: string;
  callId: string;
  last?: StoredCall;
  chain: Promise<unknown>;
  /** Reads queued or running, or just returned to a caller that may subscribe in the same turn. */
  pending: number;
}

/** How a write went: written, nothing to change, refused (a replaced session's), or failed (the store). */
type WriteResult = 'written' | 'unchanged' | 'refused' | 'failed';

/** How long this node remembers one of its writes whose `call_changed` it has not heard (the bus may lose it). */
const OWN_WRITE_MEMORY_MS = 60_000;

/**
 * How far a call's record has come, for comparing two records of one call: every write that changes what a
 * stream sends moves one of these up (a timeline entry, the outcome, its resolution, an outcome beside it, a
 * newer progress note) and none moves one down. A call's writes are one after another (its row is locked), so
 * its records are ordered and `a` is newer than `b` exactly when one of its marks is higher.
 */
const marks = (c: StoredCall): number[] => [c.timeline.length, c.outcome ? 1 : 0, c.resolved_from ? 1 : 0, c.device_outcome ? 1 : 0, c.progress?.seq ?? -1];

/** True when record `a` of a call came further than record `b` of the same call (see {@link marks}). */
export function cameFurther(a: StoredCall, b: StoredCall): boolean {
  const mb = marks(b);
  return marks(a).some((v, i) => v > mb[i]!);
}

/** A cluster node's call path: runtime side on every node, device side on the owner. */
export class ClusterCallRouter extends EventEmitter implements CallService {
  private readonly watched = new Map<string, Watch>();
  /** This node's writes to one call, one after another (a note and the outcome never race here). */
  private readonly writes = new Map<string, Promise<WriteResult>>();
  private readonly deadlines = new Map<string, NodeJS.Timeout>();
  /** Calls whose invoke is in flight on a session of this node, by call, with the session's epoch. */
  private readonly inflight = new Map<string, number>();
  /** Per call (`ws/id`) with a progress write running: the newest note waiting to be written after it. */
  private readonly progressWaiting = new Map<string, ProgressNote>();
  /**
   * This node's committing or committed writes whose `call_changed` it has not heard yet, by the token the
   * message carries, with when each began: on hearing one it reads nothing (it takes the saved record itself).
   */
  private readonly ownWrites = new Map<string, number>();
  private writeCount = 0;
  private readonly resolveWindowMs: number;
  private readonly unsubscribe: () => void;
  private closed = false;
  /** Device outcomes refused because a newer session had replaced the one they came on (fencing). */
  refusedAnswers = 0;
  private readonly sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | null = null;
  private readonly graceMs: number;
  /**
   * The reads of one turn (the owner's on `call`, the streams' and waiters'), one statement per batch; a batch
   * does not wait for the one before it (on one node the owner's read would otherwise wait behind the waiter's).
   */
  private readonly reads = new TurnBatch<CallKey, StoredCall | undefined>({ run: (keys) => this.o.store.getCalls(keys), max: CALL_BATCH_MAX, parallel: true });
  /** The `sent` marks of one turn, one statement per batch (each fenced by its own session). */
  private readonly marks = new TurnBatch<FencedCallKey, SentMark>({ run: (items) => this.o.store.markSent(items), max: CALL_BATCH_MAX });

  constructor(private readonly o: ClusterCallRouterOptions) {
    super();
    this.setMaxListeners(0);
    this.resolveWindowMs = o.resolveWindowMs ?? RESOLVE_WINDOW_MS;
    this.graceMs = o.deadlineGraceMs ?? DEADLINE_SWEEP_GRACE_MS;
    const every = o.deadlineSweepMs ?? DEADLINE_SWEEP_MS;
    if (every > 0) {
      this.sweeper = setInterval(() => void this.sweepDeadlines().catch((e: unknown) => this.o.log.warn({ err: String(e) }, 'the deadline sweep failed; the next one tries again')), every);
      this.sweeper.unref();
    }
    this.unsubscribe = o.bus.subscribe((m) => this.onBus(m));
    o.hub.onDeviceRequest(METHODS.callReport, (conn, p) => this.onReport(conn, p as { outcomes: Outcome[] }));
    o.hub.on('notification', (conn: DeviceConnection, method: string, params: unknown) => this.onNotification(conn, method, params));
    o.hub.on('online', (conn: DeviceConnection) => this.reconcile(conn));
    o.hub.on('offline', (conn: DeviceConnection) => void this.onOffline(conn).catch((e: unknown) => this.o.log.warn({ err: String(e), device_id: conn.identity.device_id }, 'could not record that a device went offline')));
    // A stream or a waiter that goes away: its call's watch is dropped once nobody else holds it.
    this.on('removeListener', (name: string | symbol) => {
      const key = typeof name === 'string' ? name.replace(/^(event|settled):/, '') : '';
      const w = this.watched.get(key);
      if (w) setImmediate(() => this.forget(key, w));
    });
  }

  private onBus(m: BusMessage): void {
    if (this.closed) return;
    if (m.type === 'call') void this.onCallMessage(m.workspace_id, m.call_id).catch((e: unknown) => this.o.log.warn({ err: String(e), call_id: m.call_id }, 'could not send a call to its device'));
    else if (m.type === 'cancel') void this.onCancelMessage(m.workspace_id, m.call_id).catch((e: unknown) => this.o.log.warn({ err: String(e), call_id: m.call_id }, 'could not cancel a call another node was asked to cancel'));
    else if (m.type === 'call_changed') {
      // This node's own write: it took the record it saved (or reads it again itself when the commit failed).
      if (m.write !== undefined && this.ownWrites.delete(m.write)) return;
      if (this.watched.has(`${m.workspace_id}/${m.call_id}`)) void this.read(m.workspace_id, m.call_id).catch((e: unknown) => this.o.log.warn({ err: String(e), call_id: m.call_id }, 'could not read a changed call'));
    } else if (m.type === 'session_replaced') this.o.hub.replaced(m.workspace_id, m.device_id, m.epoch);
  }

  // ---- The runtime side (any node) ----

  async submit(req: SubmitRequest): Promise<{ call: StoredCall; duplicate: boolean }> {
    const { workspace_id: ws, device_id: dev } = req;
    // Only the user and the function's default timeout, not the device's whole record (issue 34's profile).
    const target = await this.o.store.callTarget(ws, dev, req.function);
    if (!target) throw new RpcError(404, 'No such device in this workspace.');
    const digest = argsDigest(req.function, req.arguments);
    if (req.call_id !== undefined) {
      const existing = await this.o.store.getCall(ws, req.call_id);
      if (existing) return this.retried(existing, req, digest);
    }
    const call = newCall(req, req.call_id ?? newCallId(), target.user_id, digest, timeoutFor(req, target.timeout_ms_default));
    // One statement: the session held until the commit (a claim made meanwhile waits, so the node told owns
    // it), the insert, and the owner told on the commit.
    const r = await this.o.store.submitCall(call, encodeMessage({ type: 'call', workspace_id: ws, call_id: call.call_id }));
    if (r === 'offline') throw offlineError(dev, await this.o.store.refusedHello(ws, dev));
    if (r === 'exists') {
      // Another node inserted the same call id first: this is a retry of that call.
      const existing = await this.o.store.getCall(ws, call.call_id);
      if (existing) return this.retried(existing, req, digest);
    }
    return { call, duplicate: false };
  }

  /** A runtime's retry of a call id: the same call, or a conflict. The owner is told again while it is open (the device deduplicates). */
  private async retried(existing: StoredCall, req: SubmitRequest, digest: string): Promise<{ call: StoredCall; duplicate: boolean }> {
    if (existing.device_id !== req.device_id || existing.args_digest !== digest) throw idempotencyConflict();
    if (!existing.outcome) {
      const s = await this.o.store.session(existing.workspace_id, existing.device_id);
      if (s && !s.lapsed) await this.o.bus.notify(s.node_id, { type: 'call', workspace_id: existing.workspace_id, call_id: existing.call_id });
    }
    return { call: existing, duplicate: true };
  }

  get(workspaceId: string, callId: string): Promise<StoredCall | undefined> {
    return this.read(workspaceId, callId);
  }

  async waitFor(workspaceId: string, callId: string, ms: number): Promise<StoredCall | undefined> {
    const cur = await this.read(workspaceId, callId);
    if (!cur || cur.outcome) return cur;
    const key = `settled:${workspaceId}/${callId}`;
    return new Promise((resolve) => {
      const done = (settled?: StoredCall) => {
        clearTimeout(t);
        this.off(key, done);
        resolve(settled ?? this.read(workspaceId, callId));
      };
      const t = setClampedTimeout(done, ms);
      this.on(key, done);
    });
  }

  untilVerdict(call: StoredCall): number {
    return untilVerdict(call);
  }

  resolvableUntil(call: StoredCall, now = Date.now()): number | undefined {
    return resolvableUntil(call, this.resolveWindowMs, now);
  }

  /**
   * Cancels a call through its device. On the node holding the device's session: asks the device and takes its
   * answer. On another node: tells the owner (`cancel`; the reason stays here, the bus carries ids only) and
   * waits for the outcome as long as the owner waits for the device's answer.
   */
  async cancel(workspaceId: string, callId: string, reason?: string): Promise<StoredCall> {
    const call = await this.o.store.getCall(workspaceId, callId);
    if (!call) throw new RpcError(404, 'No such call.');
    if (call.outcome) return call;
    const conn = this.sessionFor(call);
    if (conn) {
      await this.cancelOn(conn, call, reason);
      return (await this.o.store.getCall(workspaceId, callId)) ?? call;
    }
    const s = await this.o.store.session(workspaceId, call.device_id);
    if (!s || s.lapsed) throw new WireError('device_offline', 'The device has no live session; the call cannot be cancelled now.', { details: { device_id: call.device_id } });
    const settled = this.waitFor(workspaceId, callId, CANCEL_WAIT_MS + 1000);
    await this.o.bus.notify(s.node_id, { type: 'cancel', workspace_id: workspaceId, call_id: callId });
    return (await settled) ?? call;
  }

  /** Asks the device to cancel the call and takes its answer (the owner's side of a cancel). */
  private async cancelOn(conn: DeviceConnection, call: StoredCall, reason?: string): Promise<void> {
    const outcome = await conn.peer.request<Outcome>(METHODS.cancel, { call_id: call.call_id, ...(reason ? { reason } : {}) }, CANCEL_WAIT_MS);
    await this.accept(conn, call, outcome, 'cancel result');
  }

  /** Another node's runtime asked to cancel a call whose device is here. */
  private async onCancelMessage(ws: string, callId: string): Promise<void> {
    const call = await this.o.store.getCall(ws, callId);
    const conn = call && !call.outcome ? this.sessionFor(call) : undefined;
    if (call && conn) await this.cancelOn(conn, call);
  }

  /**
   * Reads the call's record (in one statement with this node's other reads of the turn), after this node's
   * earlier reads of it; tells this node's streams and waiters what
   * changed since the last one. A caller that subscribes in the turn the read resolves misses nothing: the
   * next read needs the store, so it ends in a later turn.
   */
  private read(workspaceId: string, callId: string): Promise<StoredCall | undefined> {
    const key = `${workspaceId}/${callId}`;
    let w = this.watched.get(key);
    if (!w) this.watched.set(key, (w = { workspaceId, callId, chain: Promise.resolve(), pending: 0 }));
    return this.queue(key, w, async (watch) => {
      const row = await this.reads.add({ workspace_id: workspaceId, call_id: callId });
      if (row && watch.last) this.emitChanges(watch.last, row);
      if (row) watch.last = row;
      return row;
    });
  }

  /**
   * A record of the call this node saved (committed) itself: its streams and waiters take it as if they had
   * read it, after the reads before it, unless one of those read a record that came further. It is taken in a
   * later turn than any read before it resolved (so a caller subscribing as that read resolves misses nothing).
   */
  private take(row: StoredCall): void {
    const key = `${row.workspace_id}/${row.call_id}`;
    const w = this.watched.get(key);
    if (!w) return;
    void this.queue(key, w, async (watch) => {
      await new Promise((r) => setImmediate(r));
      if (watch.last && !cameFurther(row, watch.last)) return;
      if (watch.last) this.emitChanges(watch.last, row);
      watch.last = row;
    }).catch((e: unknown) => this.o.log.warn({ err: String(e), call_id: row.call_id }, 'could not pass on a saved call'));
  }

  /** Runs `step` on `watch` after its earlier steps; the watch is held until the turn after it ends. */
  private queue<T>(key: string, watch: Watch, step: (w: Watch) => Promise<T>): Promise<T> {
    watch.pending++;
    const p = watch.chain.then(() => step(watch));
    watch.chain = p.catch(() => undefined);
    void watch.chain.then(() =>
      setImmediate(() => {
        watch.pending--;
        this.forget(key, watch);
      }),
    );
    return p;
  }

  /** Drops a watch nobody holds (no read pending, no stream, no waiter). */
  private forget(key: string, w: Watch): void {
    if (w.pending === 0 && this.watched.get(key) === w && !this.listenerCount(`event:${key}`) && !this.listenerCount(`settled:${key}`)) this.watched.delete(key);
  }

  /** The events between two records of one call, as the single process sends them (no derived states). */
  private emitChanges(prev: StoredCall, row: StoredCall): void {
    const key = `${row.workspace_id}/${row.call_id}`;
    const seen = prev.timeline.filter((t) => !t.derived).length;
    for (const t of row.timeline.filter((x) => !x.derived).slice(seen)) {
      if (isStateEntry(t)) {
        // A terminal state travels as the outcome (or `resolved`), never as a state event.
        if (!isTerminal(t.state)) this.emit(`event:${key}`, { type: 'state', data: { call_id: row.call_id, state: t.state, at: t.at } } satisfies CallEvent);
      } else this.emit(`event:${key}`, { type: t.event, data: { call_id: row.call_id, event: t.event, at: t.at } } satisfies CallEvent);
    }
    if (row.progress && row.progress.seq > (prev.progress?.seq ?? -Infinity)) this.emit(`event:${key}`, { type: 'progress', data: row.progress } satisfies CallEvent);
    if (!prev.outcome && row.outcome) {
      this.emit(`event:${key}`, { type: 'outcome', data: row.outcome, call: row } satisfies CallEvent);
      this.emit(`settled:${key}`, row);
    } else if (prev.outcome && !prev.resolved_from && row.resolved_from && row.outcome) {
      this.emit(`event:${key}`, { type: 'resolved', data: { call_id: row.call_id, state: row.state, outcome: row.outcome, resolved_from: row.resolved_from, at: row.updated_at } } satisfies CallEvent);
    }
  }

  // ---- The device side (the owner node) ----

  /** The live session on this node of the call's own device identity, if any. */
  private sessionFor(call: StoredCall): DeviceConnection | undefined {
    const conn = this.o.hub.get(call.device_id, call.workspace_id);
    return conn && owns(conn.identity, call) ? conn : undefined;
  }

  /** A call was submitted for a device whose session this node holds (its read shares the turn's statement). */
  private async onCallMessage(ws: string, callId: string): Promise<void> {
    const call = await this.reads.add({ workspace_id: ws, call_id: callId });
    if (!call || call.outcome || this.closed) return;
    this.armDeadline(call);
    const conn = this.sessionFor(call);
    // Gone already: the node its next session lands on asks about the call (`onOnline`).
    if (conn) this.forward(conn, call);
  }

  private forward(conn: DeviceConnection, call: StoredCall): void {
    const key = `${call.workspace_id}/${call.call_id}`;
    if (this.closed || this.inflight.get(key) === conn.epoch) return;
    this.inflight.set(key, conn.epoch ?? -1);
    if (!call.sent) this.markSent(conn, call);
    // Past the deadline the bridge has given up, but it keeps listening: a late answer resolves its `unknown` (§6.8).
    const budget = Math.max(1000, call.deadline_ms - Date.now()) + LATE_LISTEN_MS;
    void conn.peer
      .request<Outcome>(METHODS.invoke, attestsRuntime(conn.protocolVersion) ? call.params : withoutRuntime(call.params), budget)
      .then((o) => this.accept(conn, call, o, 'invoke result'))
      .catch((e: unknown) => {
        if (e instanceof ConnectionClosedError || e instanceof RequestTimeoutError || this.closed) return; // reconcile / deadline take over
        const w = e instanceof WireError ? e : new WireError('execution_failed', 'The device could not take the call.', { retryable: true });
        return this.finish(conn, call, bridgeOutcome(call, 'failed', w), true, 'invoke error');
      })
      .finally(() => {
        if (this.inflight.get(key) === (conn.epoch ?? -1)) this.inflight.delete(key);
      });
  }

  /**
   * Marks the call sent, fenced by `conn`'s session, beside the invoke (not after this node's other writes to
   * the call: it changes one flag in place, so it loses no other write and none loses it); the marks of one
   * turn share one statement (`StoreOps.markSent`), each refused or written on its own.
   * Nobody is told (no call_changed): `sent` changes no event a stream or waiter sends, only what the deadline
   * says of a call its device never answered (read from the store).
   */
  private markSent(conn: DeviceConnection, call: StoredCall): void {
    if (conn.epoch === undefined) return;
    const { workspace_id: ws, call_id: id } = call;
    this.marks.add({ workspace_id: ws, device_id: conn.identity.device_id, epoch: conn.epoch, call_id: id }).then(
      (r) => {
        if (r === 'refused') this.o.log.warn({ what: 'sent', call_id: id, device_id: call.device_id, epoch: conn.epoch }, 'refused what a replaced session of the device sent: a newer session holds it');
      },
      (e: unknown) => this.o.log.error({ what: 'sent', call_id: id, err: String(e) }, 'could not save a call'),
    );
  }

  /**
   * Takes a device's outcome for a call only from a session of the call's own identity, naming this call and
   * its function; anything else is dropped and logged (ids only).
   */
  private async accept(conn: DeviceConnection, call: StoredCall, o: Outcome, what: string): Promise<WriteResult> {
    if (!owns(conn.identity, call) || !answers(o, call)) {
      this.o.log.warn({ what, call_id: call.call_id, from_device: conn.identity.device_id }, 'dropped a device answer that does not match its call or comes from another identity');
      return 'unchanged';
    }
    return this.finish(conn, call, o, false, what, conn.protocolVersion !== '1.0');
  }

  /** Writes a terminal outcome (fenced by `conn`'s session; by the store alone when null). */
  private async finish(conn: DeviceConnection | null, call: StoredCall, o: Outcome, byBridge: boolean, what: string, derive = false): Promise<WriteResult> {
    if (!isTerminal(o.state)) return 'unchanged';
    const r = await this.write(conn, call, what, (c) => applyOutcome(c, { o, byBridge, derive }) !== false);
    if (r === 'refused' && !byBridge) this.refusedAnswers++;
    if (r === 'written') this.clearDeadline(call);
    return r;
  }

  /**
   * Changes a call's record in one transaction: read, `mutate` (false: nothing to write), save, and tell every
   * node `call_changed` on the commit. With `conn`, fenced: refused when a newer session replaced `conn`'s.
   * This node's writes to one call run one after another. This node's streams and waiters take the saved
   * record (`take`) instead of reading it back on their `call_changed`, which names the write for that.
   */
  private write(conn: DeviceConnection | null, call: StoredCall, what: string, mutate: (c: StoredCall) => boolean): Promise<WriteResult> {
    const { workspace_id: ws, call_id: id } = call;
    const key = `${ws}/${id}`;
    let saved: StoredCall | undefined;
    let token = '';
    // The call is held until the commit: another node's write to this call (its sweeper's) waits instead of being lost.
    const body = async (tx: StoreOps, c: StoredCall | undefined): Promise<WriteResult> => {
      if (!c || !mutate(c)) return 'unchanged';
      await tx.saveCall(c);
      await this.o.bus.broadcast({ type: 'call_changed', workspace_id: ws, call_id: id, write: token }, tx);
      saved = c;
      return 'written';
    };
    const run = (this.writes.get(key) ?? Promise.resolve<WriteResult>('unchanged')).then(async (): Promise<WriteResult> => {
      // Known before the commit: the message may be heard before the commit's answer.
      token = this.ownWrite();
      try {
        const r = conn?.epoch !== undefined
          ? await this.o.sessions.fencedCall(ws, conn.identity.device_id, conn.epoch, id, body)
          : await this.o.store.transaction(async (tx) => body(tx, await tx.getCall(ws, id, true)));
        if (r === 'written' && saved) this.take(saved);
        else this.ownWrites.delete(token);
        return r;
      } catch (e) {
        // Committed or not: the message, if any comes, is read as anyone's, and this node's watchers read now.
        this.ownWrites.delete(token);
        if (this.watched.has(key)) void this.read(ws, id).catch(() => undefined);
        if (e instanceof StaleSessionError) {
          this.o.log.warn({ what, call_id: id, device_id: call.device_id, epoch: e.epoch }, 'refused what a replaced session of the device sent: a newer session holds it');
          return 'refused';
        }
        this.o.log.error({ what, call_id: id, err: String(e) }, 'could not save a call');
        return 'failed';
      }
    });
    this.writes.set(key, run);
    void run.then(() => {
      if (this.writes.get(key) === run) this.writes.delete(key);
    });
    return run;
  }

  /** A token for a write of this node, remembered until its `call_changed` is heard (or for OWN_WRITE_MEMORY_MS). */
  private ownWrite(): string {
    const now = Date.now();
    for (const [t, at] of this.ownWrites) {
      if (at > now - OWN_WRITE_MEMORY_MS) break;
      this.ownWrites.delete(t);
    }
    const token = `${this.o.bus.nodeId}.${++this.writeCount}`;
    this.ownWrites.set(token, now);
    return token;
  }

  private onNotification(conn: DeviceConnection, method: string, params: unknown): void {
    if (this.closed || (method !== METHODS.callState && method !== METHODS.progress)) return;
    const note = params as CallStateNote | ProgressNote;
    if (typeof note?.call_id !== 'string') return;
    const { workspace_id: ws, device_id: dev } = conn.identity;
    if (method === METHODS.progress) return this.onProgress(conn, note as ProgressNote);
    const { state, at } = note as CallStateNote;
    const stub = { workspace_id: ws, call_id: note.call_id, device_id: dev } as StoredCall;
    void this.write(conn, stub, 'call.state', (c) => {
      if (!owns(conn.identity, c) || !isNewNoteState(c, state, at)) return false;
      c.state = state as StoredCall['state'];
      c.timeline.push({ state: state as StoredCall['state'], at });
      c.updated_at = new Date().toISOString();
      return true;
    });
  }

  /**
   * A progress note: written to the call's record (fenced like every write) so the streams on every node send
   * it from there, this node's included. The latest note only: while a write runs, newer notes replace the
   * waiting one (§7: the latest value is kept when coalesced); a note older than the record's is dropped.
   */
  private onProgress(conn: DeviceConnection, note: ProgressNote): void {
    if (typeof note.seq !== 'number') return;
    const key = `${conn.identity.workspace_id}/${note.call_id}`;
    const writing = this.progressWaiting.has(key);
    this.progressWaiting.set(key, note);
    if (!writing) void this.writeProgress(conn, key);
  }

  private async writeProgress(conn: DeviceConnection, key: string): Promise<void> {
    for (;;) {
      const note = this.progressWaiting.get(key);
      if (!note || this.closed) return void this.progressWaiting.delete(key);
      const stub = { workspace_id: conn.identity.workspace_id, call_id: note.call_id, device_id: conn.identity.device_id } as StoredCall;
      await this.write(conn, stub, 'progress', (c) => {
        if (!owns(conn.identity, c) || c.outcome || (c.progress && c.progress.seq >= note.seq)) return false;
        c.progress = note;
        return true;
      });
      if (this.progressWaiting.get(key) === note) return void this.progressWaiting.delete(key);
    }
  }

  /** `aios/call.report` (§6.8): acknowledges an outcome once it is written, or can never be (no such call, or final already). */
  private async onReport(conn: DeviceConnection, p: { outcomes: Outcome[] }): Promise<{ accepted: string[] }> {
    if (this.closed) throw new WireError('not_ready', 'The bridge is stopping.');
    const accepted: string[] = [];
    const { workspace_id: ws, device_id: dev } = conn.identity;
    for (const o of p.outcomes) {
      const call = typeof o?.call_id === 'string' ? await this.o.store.findByDevice(ws, dev, o.call_id) : undefined;
      if (!call) this.o.log.warn({ workspace_id: ws, device_id: dev }, 'dropped a device answer: a call.report names no call of this device');
      // A refused answer (a replaced session) or a failed write is not acknowledged: the device reports it again.
      else {
        const r = await this.accept(conn, call, o, 'call.report');
        if (r === 'refused' || r === 'failed') continue;
      }
      accepted.push(o.call_id);
    }
    return { accepted };
  }

  /** The device's calls still open, of this session's identity. */
  private async openCallsOf(conn: DeviceConnection): Promise<StoredCall[]> {
    const { workspace_id: ws, device_id: dev } = conn.identity;
    return (await this.o.store.openCalls(dev)).filter((c) => c.workspace_id === ws && owns(conn.identity, c));
  }

  /** Records a session event on each waiting call of the device (fenced by the session). */
  private async sessionEvent(conn: DeviceConnection, calls: StoredCall[], event: SessionEventName): Promise<void> {
    const at = new Date().toISOString();
    for (const call of calls) {
      if (!takesSessionEvent(call, event)) continue;
      await this.write(conn, call, event, (c) => {
        if (c.outcome || !takesSessionEvent(c, event)) return false;
        c.timeline.push({ event, at });
        c.updated_at = at;
        return true;
      });
    }
  }

  /**
   * Reconciles a device that came online here, trying again (0.5 s, 1 s, … up to RECONCILE_RETRY_MAX_MS apart)
   * while the store fails it and the session is still this one: calls left unasked would otherwise wait for
   * their deadline, and a call the device finished would end `unknown` instead of with its outcome.
   */
  private reconcile(conn: DeviceConnection, attempt = 0): void {
    this.onOnline(conn).catch((e: unknown) => {
      const { workspace_id: ws, device_id: dev } = conn.identity;
      if (this.closed || this.o.hub.get(dev, ws) !== conn) return;
      this.o.log.warn({ err: String(e), device_id: dev, attempt: attempt + 1 }, 'could not reconcile a device\'s calls; trying again');
      setTimeout(() => this.reconcile(conn, attempt + 1), Math.min(RECONCILE_RETRY_MAX_MS, 500 * 2 ** attempt)).unref();
    });
  }

  /** After a device (re)connects here: `device_online` on its waiting calls, then ask about each one (§10, §6.8). */
  private async onOnline(conn: DeviceConnection): Promise<void> {
    if (this.closed) return;
    const open = await this.openCallsOf(conn);
    await this.sessionEvent(conn, open, 'device_online');
    // A call that could not be asked about does not stop the others; the whole pass is tried again after them.
    let missed = 0;
    for (const call of open) {
      if (this.closed || this.o.hub.get(conn.identity.device_id, conn.identity.workspace_id) !== conn) return;
      this.armDeadline(call);
      if (!(await this.askDevice(conn, call, 'open'))) missed++;
    }
    const { workspace_id: ws, device_id: dev } = conn.identity;
    for (const call of await this.o.store.unresolvedUnknowns(ws, dev, new Date(Date.now() - this.resolveWindowMs).toISOString())) {
      if (this.closed || this.o.hub.get(dev, ws) !== conn) return;
      if (owns(conn.identity, call) && !(await this.askDevice(conn, call, 'unknown'))) missed++;
    }
    if (missed) throw new Error(`${missed} of the device's calls could not be asked about`);
  }

  /** The session closed: `device_offline` on its waiting calls (unless a newer session replaced it), then the session is given up. */
  private async onOffline(conn: DeviceConnection): Promise<void> {
    if (conn.epoch === undefined) return;
    const { workspace_id: ws, device_id: dev } = conn.identity;
    try {
      if (!this.closed) await this.sessionEvent(conn, await this.openCallsOf(conn), 'device_offline');
    } finally {
      this.release(ws, dev, conn.epoch);
    }
  }

  /**
   * Gives the session up, trying again (1 s, 2 s, … up to a minute apart) while the store cannot be reached: a
   * session left on record would be renewed by this node's heartbeat, and calls for a device that is gone
   * would wait on this node instead of answering `device_offline`.
   */
  private release(ws: string, dev: string, epoch: number, attempt = 0): void {
    this.o.sessions.release(ws, dev, epoch).catch((e: unknown) => {
      if (this.closed) return;
      this.o.log.warn({ device_id: dev, err: String(e), attempt: attempt + 1 }, 'could not give up a closed session; trying again');
      setTimeout(() => this.release(ws, dev, epoch, attempt + 1), Math.min(60_000, 1000 * 2 ** attempt)).unref();
    });
  }

  /**
   * Asks the device `call.get` about one call: a terminal outcome is taken; a call running there is attached to
   * again (a re-sent invoke, which the device deduplicates). One it never saw is sent again while its deadline
   * allows, else ends `expired` (`open`); an `unknown` it never saw is cancelled there so it never runs (§6.8).
   * False when the call is left as it was (the device did not answer in time, or the store failed): the caller
   * asks again. A closed session counts as done: the node its next session lands on asks.
   */
  private async askDevice(conn: DeviceConnection, call: StoredCall, kind: 'open' | 'unknown'): Promise<boolean> {
    try {
      const r = await conn.peer.request<Outcome | { call_id: string; state: string }>(METHODS.callGet, { call_id: call.call_id }, 10_000);
      if ('error' in r) await this.accept(conn, call, r, kind === 'open' ? 'call.get result' : 'call.get result for an unknown');
      else this.forward(conn, call);
    } catch (e) {
      if (e instanceof ConnectionClosedError) return true;
      if (!(e instanceof RpcError && e.code === RPC.invalid_params)) {
        this.o.log.warn({ call_id: call.call_id, err: String(e) }, 'could not re-ask the device about a call');
        return false;
      } else if (kind === 'unknown') {
        const o = await conn.peer.request<Outcome>(METHODS.cancel, { call_id: call.call_id, reason: 'never received' }, CANCEL_WAIT_MS).catch(() => undefined);
        // A tombstone names no function (the device never knew it): it is this call's, by its id.
        if (o?.call_id === call.call_id) await this.accept(conn, call, o.function ? o : { ...o, function: call.function }, 'cancel answer for an unknown the device never saw');
      } else if (call.deadline_ms > Date.now()) this.forward(conn, call);
      else await this.finish(conn, call, neverReceivedOutcome(call), true, 'call.get: never received');
    }
    return true;
  }

  private armDeadline(call: StoredCall): void {
    const key = `${call.workspace_id}/${call.call_id}`;
    clearTimeout(this.deadlines.get(key));
    const t = setClampedTimeout(() => void this.onDeadline(call.workspace_id, call.call_id).catch((e: unknown) => this.o.log.warn({ call_id: call.call_id, err: String(e) }, 'the bridge deadline could not end a call')), call.deadline_ms - Date.now());
    t.unref();
    this.deadlines.set(key, t);
  }

  private clearDeadline(call: StoredCall): void {
    const key = `${call.workspace_id}/${call.call_id}`;
    clearTimeout(this.deadlines.get(key));
    this.deadlines.delete(key);
  }

  /**
   * The bridge gives up (§6.4, 1.2), on the node that forwarded the call: it asks the device to cancel and takes
   * its answer if one comes within CANCEL_WAIT_MS; otherwise `unknown` (`timeout` while the session lives,
   * `device_offline` when it is gone), or `expired/device_offline` when the invoke never reached a session. A
   * device now on another node is that node's to end (it armed its own deadline when the device came).
   */
  private async onDeadline(ws: string, callId: string): Promise<void> {
    this.deadlines.delete(`${ws}/${callId}`);
    if (this.closed) return;
    const call = await this.o.store.getCall(ws, callId);
    if (!call || call.outcome) return;
    if (call.deadline_ms > Date.now()) return this.armDeadline(call);
    const conn = this.sessionFor(call);
    if (conn) {
      const late = conn.peer.request<Outcome>(METHODS.cancel, { call_id: callId, reason: 'bridge deadline' }, CANCEL_WAIT_MS + LATE_LISTEN_MS).then(
        (o) => this.accept(conn, call, o, 'cancel result at the deadline'),
        (e: unknown) => {
          if (!(e instanceof ConnectionClosedError)) this.o.log.warn({ call_id: callId, err: String(e) }, 'cancel at the bridge deadline got no outcome');
        },
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([late, new Promise((r) => (timer = setTimeout(r, CANCEL_WAIT_MS)))]);
      clearTimeout(timer);
      const latest = await this.o.store.getCall(ws, callId);
      if (!latest || latest.outcome || this.closed) return;
      await this.finish(conn, latest, deadlineOutcome(latest, 'silent'), true, 'bridge deadline');
      return;
    }
    const s = await this.o.store.session(ws, call.device_id);
    if (s && !s.lapsed && s.node_id !== this.o.bus.nodeId) return;
    await this.finish(null, call, deadlineOutcome(call, call.sent ? 'gone' : 'never_sent'), true, 'bridge deadline');
  }

  /**
   * Ends the calls past their deadline (by more than the grace) that nobody ended, whichever node sent them: a
   * call whose owner node died still ends (§6.4, 1.2). Each sweep is one transaction that holds the rows it takes
   * and skips those another node's sweep (or a write) holds, so no call is ended twice. The outcome is the
   * deadline's: `unknown` with `timeout` while the device's session is live (its node should have ended it),
   * `unknown` with `device_offline` when the session is gone or lapsed, `expired` when the invoke was never
   * sent. A device's later outcome resolves the `unknown` (§6.8). Resolves with how many calls it ended.
   */
  sweepDeadlines(): Promise<number> {
    if (this.closed) return Promise.resolve(0);
    this.sweeping ??= this.o.store
      .transaction(async (tx) => {
        let ended = 0;
        for (const call of await tx.claimExpiredCalls(this.graceMs, SWEEP_BATCH)) {
          const s = await tx.session(call.workspace_id, call.device_id);
          const how = s && !s.lapsed ? 'silent' : call.sent ? 'gone' : 'never_sent';
          if (applyOutcome(call, { o: deadlineOutcome(call, how), byBridge: true, derive: false }) === false) continue;
          await tx.saveCall(call);
          await this.o.bus.broadcast({ type: 'call_changed', workspace_id: call.workspace_id, call_id: call.call_id }, tx);
          this.o.log.info({ call_id: call.call_id, device_id: call.device_id, state: call.state }, 'the deadline sweep ended a call nobody had ended');
          ended++;
        }
        return ended;
      })
      .finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  /**
   * After the bus (re)listens, and on its sweep (messages may have been lost): this node's streams read their
   * calls again, its sessions that a newer one replaced are closed (4001), and the open calls of its other
   * sessions are sent (again) to their devices.
   */
  async catchUp(_reason: CatchUpReason): Promise<void> {
    for (const w of [...this.watched.values()]) void this.read(w.workspaceId, w.callId).catch(() => undefined);
    // Two reads for all of this node's sockets (not two per socket): the sessions the store says it holds, and
    // their open calls. A socket whose session is not among them (claimed after the read, or replaced) is
    // checked on its own before it is closed.
    const node = this.o.bus.nodeId;
    const held = new Map((await this.o.store.nodeSessions(node)).map((s) => [`${s.workspace_id}/${s.device_id}`, s.epoch]));
    const open = new Map<string, StoredCall[]>();
    for (const c of await this.o.store.openCallsOfNode(node)) {
      const k = `${c.workspace_id}/${c.device_id}`;
      const list = open.get(k);
      if (list) list.push(c);
      else open.set(k, [c]);
    }
    for (const conn of this.o.hub.connections()) {
      if (this.closed || conn.epoch === undefined) continue;
      const { workspace_id: ws, device_id: dev } = conn.identity;
      const key = `${ws}/${dev}`;
      if (held.get(key) !== conn.epoch) {
        if (!(await this.o.store.isCurrent(ws, dev, conn.epoch))) this.o.hub.replaced(ws, dev, conn.epoch + 1);
        // Current after all (claimed after the read): its hello's own reconciliation covers its calls.
        continue;
      }
      for (const call of open.get(key) ?? []) {
        if (!owns(conn.identity, call)) continue;
        this.armDeadline(call);
        this.forward(conn, call);
      }
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    this.unsubscribe();
    for (const t of this.deadlines.values()) clearTimeout(t);
    this.deadlines.clear();
    this.removeAllListeners();
  }
}
