/**
 * Routing runtime calls to devices (PROTOCOL.md §6, §10): call records, forwarding, bridge-side
 * deadlines and cancel, outcome delivery through the invoke response, `call.report` and re-asking
 * devices with `call.get` after a reconnect or a bridge restart.
 */
import { EventEmitter } from 'node:events';
import { newCallId } from '../protocol/call-id.js';
import { argsDigest } from '../protocol/hash.js';
import { RPC, RpcError, WireError } from '../protocol/errors.js';
import { attestsRuntime, isTerminal, MAX_TIME_PARAM_MS, METHODS, type CallStateNote, type Outcome, type ProgressNote } from '../protocol/messages.js';
import { ConnectionClosedError, RequestTimeoutError } from '../protocol/peer.js';
import type { Logger } from '../base/logger.js';
import type { DeviceConnection, DeviceHub } from './device-hub.js';
import { deviceKey, type BridgeCallState, type BridgeStore, type SessionEventName, type StoredCall } from './store.js';
import { setClampedTimeout } from '../base/timers.js';
import { CallWrites } from './call-writes.js';
import {
  answers, applyOutcome, bridgeOutcome, callTimeoutMs, deadlineOutcome, neverReceivedOutcome, CANCEL_WAIT_MS, idempotencyConflict, isNewNoteState, LATE_LISTEN_MS, newCall, offlineError, outcomeIsFinal,
  owns, resolvableUntil, RESOLVE_WINDOW_MS, takesSessionEvent, untilVerdict, withoutRuntime,
  type Applied, type CallEvent, type CallService, type PendingOutcome, type ResolvedData, type SubmitRequest,
} from './call-lifecycle.js';

export { RESOLVE_WINDOW_MS, withDerivedStates, type CallEvent, type LearnedState, type ResolvedData, type SessionEventData, type SubmitRequest } from './call-lifecycle.js';

/** Emits `event:<workspace>/<call_id>` with CallEvent and `settled:<workspace>/<call_id>` when terminal. */
export class CallRouter extends EventEmitter implements CallService {
  private readonly deadlines = new Map<string, NodeJS.Timeout>();
  /**
   * The records of calls not yet finished: the one copy the router reads and changes until the
   * outcome, so a call's notes and outcome cost no query and no parse. By `workspace/call_id` (the
   * runtime's view) and by the session's (workspace, device) and call_id (notes and reports carry only
   * the call id; the session they came on says whose they are).
   */
  private readonly live = new Map<string, StoredCall>();
  private readonly open = new Map<string, StoredCall>();
  /** The same open calls by device (`deviceKey`): a device's session events touch only its own. */
  private readonly openByDevice = new Map<string, Map<string, StoredCall>>();
  /** The turn's writes, committed together at its end (`call-writes.ts`). */
  private readonly writes: CallWrites;
  private closed = false;

  /** The §6.8 resolution window (RESOLVE_WINDOW_MS; shorter only in tests). */
  private readonly resolveWindowMs: number;

  constructor(
    private readonly store: BridgeStore,
    private readonly hub: DeviceHub,
    private readonly log: Logger,
    opts: { resolveWindowMs?: number } = {},
  ) {
    super();
    this.resolveWindowMs = opts.resolveWindowMs ?? RESOLVE_WINDOW_MS;
    this.setMaxListeners(0);
    this.writes = new CallWrites(store, log, {
      apply: (call, p) => this.applyOutcome(call, p),
      committed: (inserted, applied) => {
        for (const c of inserted) if (!c.outcome) this.forward(c);
        for (const [c, how] of applied) {
          if (how === 'resolved') this.announceResolved(c);
          else if (how === 'new') this.announce(c);
        }
      },
      lost: (inserted) => {
        for (const c of inserted) this.untrack(c);
      },
    });
    hub.onDeviceRequest(METHODS.callReport, (conn, p) => this.onReport(conn, p as { outcomes: Outcome[] }));
    hub.on('notification', (conn: DeviceConnection, method: string, params: unknown) => this.onNotification(conn, method, params));
    hub.on('offline', (conn: DeviceConnection) => this.onSession(conn, 'device_offline'));
    hub.on('online', (conn: DeviceConnection) => {
      this.onSession(conn, 'device_online');
      void this.reconcile(conn);
    });
    for (const c of store.openCalls()) {
      this.track(c);
      this.armDeadline(c);
    }
  }

  /** A call's current record: the live one while it is open, else the stored one. */
  private lookup(workspaceId: string, callId: string): StoredCall | undefined {
    const key = `${workspaceId}/${callId}`;
    return this.live.get(key) ?? this.writes.resolvingCall(workspaceId, callId) ?? this.store.getCall(workspaceId, callId);
  }

  /** True when the call has an outcome, recorded or taken this turn (and about to be committed). */
  private hasOutcome(c: StoredCall): boolean {
    return c.outcome !== undefined || this.writes.pendingOutcome(c) !== undefined;
  }

  private track(c: StoredCall): void {
    this.open.set(openKey(c.workspace_id, c.device_id, c.call_id), c);
    const dk = deviceKey(c.workspace_id, c.device_id);
    let mine = this.openByDevice.get(dk);
    if (!mine) this.openByDevice.set(dk, (mine = new Map()));
    mine.set(c.call_id, c);
    this.live.set(`${c.workspace_id}/${c.call_id}`, c);
  }

  private markDirty(c: StoredCall): void {
    this.writes.changed(c);
  }

  /**
   * Submits a call; resolves once its record is committed (and it is on its way to the device). Rejects with
   * WireError (device_offline, idempotency_conflict), RpcError 404 for an unknown device.
   */
  async submit(req: SubmitRequest, budgetFor?: (fn: string) => { timeoutMs: number }): Promise<{ call: StoredCall; duplicate: boolean }> {
    const device = this.store.getDevice(req.workspace_id, req.device_id);
    if (!device) throw new RpcError(404, 'No such device in this workspace.');
    const digest = argsDigest(req.function, req.arguments);
    // A call id the bridge mints now is new (UUIDv7): only a runtime's own id can name an existing call.
    const existing = req.call_id !== undefined ? this.lookup(req.workspace_id, req.call_id) : undefined;
    if (existing) {
      if (existing.device_id !== req.device_id || existing.args_digest !== digest) throw idempotencyConflict();
      // Not answered before the first submission's record is committed.
      await this.writes.settled();
      // A runtime retry: the device deduplicates; re-forward only if the call is not finished.
      if (!this.hasOutcome(existing) && this.hub.isOnline(existing.device_id, existing.workspace_id)) this.forward(existing);
      return { call: existing, duplicate: true };
    }
    const callId = req.call_id ?? newCallId();
    const conn = this.hub.get(req.device_id, req.workspace_id);
    // A device the bridge refused at its last hello is not "off": say why (§10, 1.2).
    if (!conn) throw offlineError(req.device_id, this.hub.lastRefusedHello(req.workspace_id, req.device_id));
    const timeout = req.timeout_ms ?? (budgetFor ? Math.min(budgetFor(req.function).timeoutMs, MAX_TIME_PARAM_MS) : callTimeoutMs(req, device));
    const call = newCall(req, callId, device.user_id, digest, timeout);
    const saved = this.writes.insert(call);
    this.track(call);
    this.armDeadline(call);
    await saved;
    return { call, duplicate: false };
  }

  /**
   * Milliseconds until the bridge will have given up on the call (its deadline and the wait for the cancel
   * answer, §6.4): how long `wait` waits by default, so it returns the bridge's verdict rather than 202.
   */
  untilVerdict(call: StoredCall): number {
    return untilVerdict(call);
  }

  get(workspaceId: string, callId: string): StoredCall | undefined {
    return this.lookup(workspaceId, callId);
  }

  /** Waits until the call is terminal or `ms` passes; resolves with the current record. */
  waitFor(workspaceId: string, callId: string, ms: number): Promise<StoredCall | undefined> {
    const cur = this.lookup(workspaceId, callId);
    if (!cur || cur.outcome) return Promise.resolve(cur); // an outcome on a record is committed
    const key = `settled:${workspaceId}/${callId}`;
    return new Promise((resolve) => {
      // The settled record comes with the event: no read back from the store.
      const done = (settled?: StoredCall) => {
        clearTimeout(t);
        this.off(key, done);
        resolve(settled ?? this.lookup(workspaceId, callId));
      };
      const t = setClampedTimeout(done, ms);
      this.on(key, done);
    });
  }

  /** Cancels a call through its device; returns the outcome. */
  async cancel(workspaceId: string, callId: string, reason?: string): Promise<StoredCall> {
    const call = this.lookup(workspaceId, callId);
    if (!call) throw new RpcError(404, 'No such call.');
    if (call.outcome) return call;
    if (this.writes.pendingOutcome(call)) {
      await this.writes.settled();
      return this.lookup(workspaceId, callId)!;
    }
    const conn = this.sessionFor(call);
    if (!conn) throw new WireError('device_offline', 'The device has no live session; the call cannot be cancelled now.', { details: { device_id: call.device_id } });
    const outcome = await conn.peer.request<Outcome>(METHODS.cancel, { call_id: callId, ...(reason ? { reason } : {}) }, CANCEL_WAIT_MS);
    this.accept(conn, call, outcome, 'cancel result');
    await this.writes.settled();
    return this.lookup(workspaceId, callId)!;
  }

  /** The live session of the call's own device identity (workspace, user, device), if any. */
  private sessionFor(call: StoredCall): DeviceConnection | undefined {
    const conn = this.hub.get(call.device_id, call.workspace_id);
    return conn && owns(conn.identity, call) ? conn : undefined;
  }

  /**
   * Takes a device's outcome for a call only from the session of the call's own identity and only when it
   * names this call and function; anything else is dropped and logged (ids only, no data).
   */
  private accept(conn: DeviceConnection, call: StoredCall, o: Outcome, what: string): boolean {
    const from = conn.identity;
    const ok = owns(from, call) && answers(o, call);
    if (!ok) {
      this.log.warn(
        { what, call_id: call.call_id, workspace_id: call.workspace_id, device_id: call.device_id, from_workspace: from.workspace_id, from_device: from.device_id,
          answered_call_id: typeof o?.call_id === 'string' ? o.call_id.slice(0, 80) : null },
        'dropped a device answer that does not match its call or comes from another identity',
      );
      return false;
    }
    const latest = this.lookup(call.workspace_id, call.call_id);
    if (latest && !this.closed) this.finish(latest, o, false, conn.protocolVersion !== '1.0');
    return true;
  }

  private forward(call: StoredCall): void {
    const conn = this.sessionFor(call);
    if (!conn) return;
    // Past the deadline the bridge has given up, but it keeps listening: a late answer resolves its `unknown` (§6.8).
    const budget = Math.max(1000, call.deadline_ms - Date.now()) + LATE_LISTEN_MS;
    if (!call.sent) {
      call.sent = true;
      this.markDirty(call);
    }
    conn.peer
      .request<Outcome>(METHODS.invoke, attestsRuntime(conn.protocolVersion) ? call.params : withoutRuntime(call.params), budget)
      .then((o) => void this.accept(conn, call, o, 'invoke result'))
      .catch((e: unknown) => {
        if (e instanceof ConnectionClosedError || e instanceof RequestTimeoutError) return; // reconcile / deadline take over
        const w = e instanceof WireError ? e : new WireError('execution_failed', 'The device could not take the call.', { retryable: true });
        if (this.closed) return;
        const latest = this.lookup(call.workspace_id, call.call_id);
        if (latest) this.finish(latest, bridgeOutcome(latest, 'failed', w), true);
      });
  }

  private armDeadline(call: StoredCall): void {
    const key = `${call.workspace_id}/${call.call_id}`;
    clearTimeout(this.deadlines.get(key));
    const t = setClampedTimeout(() => void this.onDeadline(call.workspace_id, call.call_id), call.deadline_ms - Date.now());
    t.unref();
    this.deadlines.set(key, t);
  }

  /**
   * The bridge gives up (§6.4, 1.2): it asks the device to cancel and takes its answer if one comes within
   * CANCEL_WAIT_MS; otherwise it ends the call with what it knows: `unknown` (`device_offline` when the session
   * is gone, `timeout` when it is alive but silent), or `expired/device_offline` with no side effects when the
   * invoke never reached a live session. It keeps listening for the cancel answer after that (§6.8).
   */
  private async onDeadline(ws: string, callId: string): Promise<void> {
    this.deadlines.delete(`${ws}/${callId}`);
    if (this.closed) return;
    const call = this.lookup(ws, callId);
    if (!call || this.hasOutcome(call)) return;
    // A deadline beyond what one timer holds (clamped) is armed again until it is reached.
    if (call.deadline_ms > Date.now()) return this.armDeadline(call);
    const conn = this.sessionFor(call);
    if (conn) {
      const answer = conn.peer.request<Outcome>(METHODS.cancel, { call_id: callId, reason: 'bridge deadline' }, CANCEL_WAIT_MS + LATE_LISTEN_MS);
      const late = answer.then(
        (o) => {
          const latest = this.lookup(ws, callId);
          if (latest && !this.closed) this.accept(conn, latest, o, 'cancel result at the deadline');
        },
        (e: unknown) => {
          if (!(e instanceof ConnectionClosedError)) this.log.warn({ call_id: callId, err: String(e) }, 'cancel at the bridge deadline got no outcome');
        },
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([late, new Promise((r) => (timer = setTimeout(r, CANCEL_WAIT_MS)))]);
      clearTimeout(timer);
      if (this.closed) return;
      // An outcome taken this turn is committed at its end: judge after it.
      await this.writes.settled().catch(() => undefined);
    }
    const latest = this.lookup(ws, callId);
    if (!latest || this.hasOutcome(latest)) return;
    this.finish(latest, deadlineOutcome(latest, conn ? 'silent' : latest.sent ? 'gone' : 'never_sent'), true);
  }

  /**
   * Takes a terminal outcome; it is applied and committed at the end of the turn, then announced. A device
   * outcome never replaces another device outcome. One the bridge produced itself: a device outcome taken in
   * the same turn replaces it (it was never told); a committed bridge `unknown` is resolved once by it (§6.8,
   * `resolved_from`); any other committed bridge outcome keeps it beside as `device_outcome`. `derive`: the
   * outcome came on a 1.1 session, which sends no note for a state that did not last; the timeline gets those
   * states from the outcome's timestamps, marked derived (§6.2).
   */
  private finish(call: StoredCall, o: Outcome, byBridge: boolean, derive = false): void {
    if (this.closed || !isTerminal(o.state)) return;
    const pending = this.writes.pendingOutcome(call);
    if (pending && (byBridge || !pending.byBridge)) return;
    if (call.outcome && outcomeIsFinal(call, byBridge)) return;
    this.writes.outcome(call, { o, byBridge, derive }, call.outcome !== undefined && !this.live.has(`${call.workspace_id}/${call.call_id}`));
  }

  /** Applies a taken outcome to the record (just before the commit); says how, or false when it changes nothing. */
  private applyOutcome(call: StoredCall, p: PendingOutcome): Applied | false {
    const how = applyOutcome(call, p);
    if (how === 'new') this.untrack(call);
    return how;
  }

  /** The open calls sent to one device, in the order they were opened (a snapshot). */
  private openOn(workspaceId: string, deviceId: string): StoredCall[] {
    return [...(this.openByDevice.get(deviceKey(workspaceId, deviceId))?.values() ?? [])];
  }

  private untrack(call: StoredCall): void {
    this.open.delete(openKey(call.workspace_id, call.device_id, call.call_id));
    const dk = deviceKey(call.workspace_id, call.device_id);
    const mine = this.openByDevice.get(dk);
    if (mine?.delete(call.call_id) && !mine.size) this.openByDevice.delete(dk);
    const key = `${call.workspace_id}/${call.call_id}`;
    this.live.delete(key);
    clearTimeout(this.deadlines.get(key));
    this.deadlines.delete(key);
  }

  /**
   * When the call ended in the bridge's own `unknown` and the device's outcome may still resolve it (§6.8):
   * the time (ms since the epoch) the resolution window closes; undefined for every other call, and once the
   * window has passed. The one rule for every reader (the SSE stream's replay and live paths, reconcile).
   */
  resolvableUntil(call: StoredCall, now = Date.now()): number | undefined {
    return resolvableUntil(call, this.resolveWindowMs, now);
  }

  /** Tells subscribers and waiters about a committed outcome. */
  private announce(call: StoredCall): void {
    const key = `${call.workspace_id}/${call.call_id}`;
    this.emit(`event:${key}`, { type: 'outcome', data: call.outcome!, call } satisfies CallEvent);
    this.emit(`settled:${key}`, call);
  }

  /** Tells SSE subscribers that the device's own outcome resolved the bridge's `unknown` (§6.8). */
  private announceResolved(call: StoredCall): void {
    const data: ResolvedData = { call_id: call.call_id, state: call.state, outcome: call.outcome!, resolved_from: call.resolved_from!, at: call.updated_at };
    this.emit(`event:${call.workspace_id}/${call.call_id}`, { type: 'resolved', data } satisfies CallEvent);
  }

  /**
   * The device's session dropped or came back (§6.4, 1.2): every call still waiting on it records the event
   * in its timeline and SSE sends it at once. `device_online` only follows a `device_offline` the call recorded.
   */
  private onSession(conn: DeviceConnection, event: SessionEventName): void {
    if (this.closed) return;
    const at = new Date().toISOString();
    const { device_id: dev, workspace_id: ws } = conn.identity;
    for (const call of this.openOn(ws, dev)) {
      if (!owns(conn.identity, call) || this.hasOutcome(call)) continue;
      if (!takesSessionEvent(call, event)) continue;
      call.timeline.push({ event, at });
      call.updated_at = at;
      this.markDirty(call);
      this.emit(`event:${ws}/${call.call_id}`, { type: event, data: { call_id: call.call_id, event, at } } satisfies CallEvent);
    }
  }

  private onNotification(conn: DeviceConnection, method: string, params: unknown): void {
    if (this.closed) return;
    if (method === METHODS.callState || method === METHODS.progress) {
      const note = params as CallStateNote | ProgressNote;
      const call = this.open.get(openKey(conn.identity.workspace_id, conn.identity.device_id, note.call_id));
      if (!call || !owns(conn.identity, call)) return;
      const key = `${call.workspace_id}/${call.call_id}`;
      if (method === METHODS.callState) {
        const s = (note as CallStateNote).state;
        // Only a state the bridge did not know yet is news: a repeated note adds nothing to the record or the stream.
        const at: unknown = (note as CallStateNote).at;
        if (!this.hasOutcome(call) && isNewNoteState(call, s, at)) {
          call.state = s as BridgeCallState;
          call.timeline.push({ state: s, at });
          call.updated_at = new Date().toISOString();
          this.markDirty(call);
          this.emit(`event:${key}`, { type: 'state', data: { call_id: call.call_id, state: s as BridgeCallState, at } } satisfies CallEvent);
        }
      } else {
        this.emit(`event:${key}`, { type: 'progress', data: note as ProgressNote } satisfies CallEvent);
      }
    }
  }

  /** `aios/call.report` (§6.8): idempotent by call_id; acknowledges every outcome it has recorded or can never record. */
  private async onReport(conn: DeviceConnection, p: { outcomes: Outcome[] }): Promise<{ accepted: string[] }> {
    if (this.closed) throw new WireError('not_ready', 'The bridge is stopping.');
    const accepted: string[] = [];
    const { workspace_id: ws, device_id: dev } = conn.identity;
    for (const o of p.outcomes) {
      const call = this.open.get(openKey(ws, dev, o.call_id)) ?? this.writes.resolvingCall(ws, o.call_id) ?? this.store.findByDevice(ws, dev, o.call_id);
      // A report for a call of another identity is dropped (and logged); it is acknowledged like an unknown one.
      if (call) this.accept(conn, call, o, 'call.report');
      else this.log.warn({ workspace_id: ws, device_id: dev, call_id: String(o.call_id).slice(0, 80) }, 'dropped a device answer: a call.report names no call of this device');
      accepted.push(o.call_id);
    }
    // Acknowledged only once committed: the device then forgets them (§6.8).
    await this.writes.settled();
    return { accepted };
  }

  /** After a device (re)connects: ask about every call the bridge did not see finish (§10). */
  private async reconcile(conn: DeviceConnection): Promise<void> {
    if (this.closed) return;
    // The live records (not a second copy read from the store): a snapshot, as the loop waits.
    const { device_id: dev, workspace_id: ws } = conn.identity;
    for (const call of this.openOn(ws, dev).filter((c) => owns(conn.identity, c))) {
      if (this.closed) return;
      if (this.hasOutcome(call)) continue; // finished while an earlier one was being asked about
      await this.askDevice(conn, call, 'open');
    }
    await this.resolveUnknowns(conn);
  }

  /**
   * After a reconnect: asks `call.get` about every call the bridge ended `unknown` on this device in the
   * resolution window (§6.8).
   */
  private async resolveUnknowns(conn: DeviceConnection): Promise<void> {
    const { device_id: dev, workspace_id: ws } = conn.identity;
    let calls: StoredCall[];
    try {
      calls = this.store.unresolvedUnknowns(ws, dev, new Date(Date.now() - this.resolveWindowMs).toISOString());
    } catch (e) {
      this.log.warn({ device_id: dev, err: String(e) }, 'could not list the calls to resolve');
      return;
    }
    for (const stored of calls) {
      if (this.closed || this.hub.get(dev, ws) !== conn) return;
      if (!owns(conn.identity, stored)) continue;
      await this.askDevice(conn, stored, 'unknown');
    }
  }

  /**
   * Asks the reconnected device `call.get` about one call and acts on the answer: a terminal outcome is taken
   * (for an `unknown`, it resolves it); a call still running there is attached to again (a re-sent invoke,
   * which the device deduplicates), so its outcome comes as that invoke's response. A call the device never
   * saw is sent again while its deadline allows, else ends `expired` (`open`); an `unknown` it never saw is
   * cancelled there so it can never run (`tombstone`).
   */
  private async askDevice(conn: DeviceConnection, call: StoredCall, kind: 'open' | 'unknown'): Promise<void> {
    try {
      const r = await conn.peer.request<Outcome | { call_id: string; state: string }>(METHODS.callGet, { call_id: call.call_id }, 10_000);
      const latest = kind === 'open' ? call : this.lookup(call.workspace_id, call.call_id);
      if (!latest || latest.resolved_from) return;
      if ('error' in r) this.accept(conn, latest, r, kind === 'open' ? 'call.get result' : 'call.get result for an unknown');
      else this.forward(latest);
    } catch (e) {
      if (!(e instanceof RpcError && e.code === RPC.invalid_params)) {
        this.log.warn({ call_id: call.call_id, err: String(e) }, kind === 'open' ? 'could not re-ask the device about a call' : 'could not resolve a call the bridge ended unknown');
      } else if (kind === 'unknown') await this.tombstone(conn, call);
      else if (call.deadline_ms > Date.now()) this.forward(call);
      else this.finish(call, neverReceivedOutcome(call), true);
    }
  }

  /**
   * A call the bridge ended `unknown` that the device never saw (its invoke was lost with the session): the
   * bridge cancels it there, which journals a tombstone (§6.5), so the invoke can never run later, and the
   * device's answer, `cancelled` with no side effects, is its own outcome for the call (§6.8).
   */
  private async tombstone(conn: DeviceConnection, call: StoredCall): Promise<void> {
    try {
      const o = await conn.peer.request<Outcome>(METHODS.cancel, { call_id: call.call_id, reason: 'never received' }, CANCEL_WAIT_MS);
      const latest = this.lookup(call.workspace_id, call.call_id);
      // A tombstone names no function (the device never knew it): it is this call's, by its id.
      if (latest && o?.call_id === call.call_id) this.accept(conn, latest, o.function ? o : { ...o, function: call.function }, 'cancel answer for an unknown the device never saw');
    } catch (e) {
      this.log.warn({ call_id: call.call_id, err: String(e) }, 'could not resolve a call the bridge ended unknown');
    }
  }

  close(): void {
    this.writes.close();
    this.closed = true;
    for (const t of this.deadlines.values()) clearTimeout(t);
    this.removeAllListeners();
  }
}

function openKey(workspaceId: string, deviceId: string, callId: string): string {
  return `${deviceKey(workspaceId, deviceId)}/${callId}`;
}
