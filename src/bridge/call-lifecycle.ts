/**
 * The rules of a call's life (PROTOCOL.md §6, §10), shared by the two call paths: the single process's
 * `CallRouter` (calls.ts, over SQLite with a group commit) and a cluster node's `ClusterCallRouter`
 * (cluster/cluster-calls.ts, over PostgreSQL and the cluster bus). What a new call's record and invoke hold,
 * how a terminal outcome changes a record, whose session may answer, and the times the bridge gives up at.
 * Nothing here touches a store, a socket or a timer.
 */
import type { EventEmitter } from 'node:events';
import { WireError } from '../protocol/errors.js';
import { preAcceptOutcome } from '../protocol/outcomes.js';
import { MAX_TIME_PARAM_MS, type AttestedRuntime, type InvokeParams, type Outcome, type ProgressNote, type Requester } from '../protocol/messages.js';
import type { DeviceIdentity } from './auth.js';
import { isStateEntry, type BridgeCallState, type DeviceRecord, type RefusedHello, type ResolvedFrom, type SessionEventName, type StoredCall, type TimelineEntry } from './store.js';

export const DEFAULT_CONFIRM_TIMEOUT_MS = 60_000;
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEADLINE_SLACK_MS = 5000;
/** How long the bridge waits for the device's answer to its cancel at the deadline (§6.4). */
export const CANCEL_WAIT_MS = 7000;
/**
 * How long the bridge keeps listening for a device's late answer (an invoke response or a cancel answer on a
 * session that stayed open) after it gave up: as long as it re-asks reconnecting devices about its `unknown`s (§6.8).
 */
export const LATE_LISTEN_MS = 24 * 3600_000;
/**
 * How long the bridge waits for the device's own outcome to resolve an `unknown` it issued (§6.8): it re-asks
 * a reconnecting device about those calls in this window, and SSE streams waiting for `resolved` end with it.
 */
export const RESOLVE_WINDOW_MS = 24 * 3600_000;

/** What a runtime submits (POST /v1/calls). */
export interface SubmitRequest {
  workspace_id: string;
  device_id: string;
  function: string;
  arguments: Record<string, unknown>;
  call_id?: string;
  timeout_ms?: number;
  confirm_timeout_ms?: number;
  descriptor_hash?: string;
  requester?: Requester;
  /** The runtime the bridge attests (its token's entry), sent in invokes on 1.2 sessions (§6.1). */
  runtime?: AttestedRuntime;
}

/** A state the bridge learned, as SSE subscribers see it (their stream numbers it with `seq`). */
export interface LearnedState {
  call_id: string;
  state: BridgeCallState;
  at: string;
}

/**
 * A call event for SSE subscribers: a state the bridge has just learned, a progress note, or the
 * outcome (with the committed record it ended). Never a derived state: SSE sends no back-dated events (§6.2).
 */
export type CallEvent =
  | { type: 'state'; data: LearnedState }
  | { type: 'progress'; data: ProgressNote }
  | { type: 'outcome'; data: Outcome; call: StoredCall }
  /** The device's session dropped or came back while the call waited (§6.4, 1.2). */
  | { type: SessionEventName; data: SessionEventData }
  /** The device's own outcome resolved the bridge's `unknown` (§6.8, 1.2). */
  | { type: 'resolved'; data: ResolvedData };

/** A session event as SSE sends it (and the timeline keeps it, without `call_id`). */
export interface SessionEventData {
  call_id: string;
  event: SessionEventName;
  at: string;
}

/** What SSE `resolved` carries: the call's new state and outcome, and the `unknown` it replaced. */
export interface ResolvedData {
  call_id: string;
  state: BridgeCallState;
  outcome: Outcome;
  resolved_from: ResolvedFrom;
  at: string;
}

/**
 * What the runtime API asks of a call path. Both emit `event:<workspace>/<call_id>` with a {@link CallEvent}
 * and `settled:<workspace>/<call_id>` with the settled record; a listener added right after `get` resolves
 * hears every change after the record `get` gave.
 */
export interface CallService extends Pick<EventEmitter, 'on' | 'off'> {
  /**
   * Submits a call; resolves once its record is committed. Rejects with WireError (device_offline,
   * idempotency_conflict, a refused hello's type), RpcError 404 for an unknown device.
   */
  submit(req: SubmitRequest): Promise<{ call: StoredCall; duplicate: boolean }>;
  /** The call's current record (synchronous where the path holds it in memory). */
  get(workspaceId: string, callId: string): StoredCall | undefined | Promise<StoredCall | undefined>;
  /** Waits until the call is terminal or `ms` passes; resolves with the current record. */
  waitFor(workspaceId: string, callId: string, ms: number): Promise<StoredCall | undefined>;
  /** Cancels a call through its device; resolves with the record. */
  cancel(workspaceId: string, callId: string, reason?: string): Promise<StoredCall>;
  /** Milliseconds until the bridge will have given up on the call (`wait`'s default). */
  untilVerdict(call: StoredCall): number;
  /** When the bridge's own `unknown` may still be resolved: the time its window closes (ms), else undefined. */
  resolvableUntil(call: StoredCall, now?: number): number | undefined;
}

/** The invoke's timeout: the runtime's, else the function's default, capped like a runtime's own (a descriptor may say anything). */
export function callTimeoutMs(req: SubmitRequest, device: DeviceRecord): number {
  return timeoutFor(req, device.functions.find((f) => f.id === req.function)?.timeout_ms_default);
}

/** The invoke's timeout given the function's default (`callTimeoutMs` with the default already looked up). */
export function timeoutFor(req: SubmitRequest, functionDefault: number | undefined): number {
  return req.timeout_ms ?? Math.min(functionDefault ?? DEFAULT_TIMEOUT_MS, MAX_TIME_PARAM_MS);
}

/** A new call's record (state `submitted`, not yet sent) with the invoke it sends. */
export function newCall(req: SubmitRequest, callId: string, userId: string, argsDigest: string, timeoutMs: number): StoredCall {
  const confirm = req.confirm_timeout_ms ?? DEFAULT_CONFIRM_TIMEOUT_MS;
  const params: InvokeParams = {
    call_id: callId,
    function: req.function,
    arguments: req.arguments,
    workspace_id: req.workspace_id,
    user_id: userId,
    device_id: req.device_id,
    timeout_ms: timeoutMs,
    // Only when the runtime set it: otherwise the device's own `confirmations.timeout_ms` applies.
    ...(req.confirm_timeout_ms !== undefined ? { confirm_timeout_ms: req.confirm_timeout_ms } : {}),
    attempt: 1,
    ...(req.descriptor_hash ? { descriptor_hash: req.descriptor_hash } : {}),
    ...(req.requester ? { requester: req.requester } : {}),
    ...(req.runtime ? { runtime: req.runtime } : {}),
  };
  const now = new Date().toISOString();
  return {
    call_id: callId,
    workspace_id: req.workspace_id,
    device_id: req.device_id,
    function: req.function,
    state: 'submitted',
    created_at: now,
    updated_at: now,
    timeline: [{ state: 'submitted', at: now }],
    args_digest: argsDigest,
    params,
    deadline_ms: Date.now() + confirm + timeoutMs + DEADLINE_SLACK_MS,
    bridge_outcome: false,
    sent: false,
  };
}

/** The error for a call to a device with no live session: its last refused hello's type when it has one (§10, 1.2). */
export function offlineError(deviceId: string, refused: RefusedHello | undefined): WireError {
  if (refused) {
    const { type, message: _m, ...last } = refused;
    const t = (['client_outdated', 'unsupported_protocol_version', 'identity_mismatch'] as const).find((x) => x === type) ?? 'device_offline';
    return new WireError(t, `The bridge refused the device's last hello: ${refused.message}`, { details: { device_id: deviceId, last_refused_hello: { type, ...last } } });
  }
  return new WireError('device_offline', 'The device has no live session with the bridge.', { details: { device_id: deviceId } });
}

/** The other side of an idempotent retry: the call id names a call to another device or with other arguments. */
export function idempotencyConflict(): WireError {
  return new WireError('idempotency_conflict', 'This call_id was already used with a different device, function or arguments.');
}

/** Milliseconds until the bridge will have given up on the call (its deadline and the wait for the cancel answer, §6.4). */
export function untilVerdict(call: StoredCall): number {
  return Math.max(0, call.deadline_ms + CANCEL_WAIT_MS + 1000 - Date.now());
}

/**
 * When the call ended in the bridge's own `unknown` and the device's outcome may still resolve it (§6.8): the
 * time (ms since the epoch) the resolution window closes; undefined for every other call, and once it passed.
 */
export function resolvableUntil(call: StoredCall, windowMs: number, now = Date.now()): number | undefined {
  if (call.state !== 'unknown' || !call.bridge_outcome || call.resolved_from) return undefined;
  const until = Date.parse(call.updated_at) + windowMs;
  return until > now ? until : undefined;
}

/** An outcome the bridge produced itself (it gave up, or the device could not take the call). */
export function bridgeOutcome(call: StoredCall, state: 'failed' | 'expired' | 'unknown', err: WireError): Outcome {
  return preAcceptOutcome(call.call_id, call.function, state, err);
}

/**
 * The bridge's own outcome when it gives up at the deadline (§6.4, 1.2): `unknown` with `timeout` while the
 * session lives but is silent, `unknown` with `device_offline` when the session is gone, and `expired` with no
 * side effects when the invoke never reached a live session.
 */
export function deadlineOutcome(call: StoredCall, how: 'silent' | 'gone' | 'never_sent'): Outcome {
  if (how === 'never_sent') return bridgeOutcome(call, 'expired', new WireError('device_offline', 'The device had no live session before the bridge deadline; the call never reached it.', { sideEffects: 'none', details: { source: 'bridge' } }));
  const err = how === 'silent'
    ? new WireError('timeout', 'The device did not answer before the bridge deadline; whether the call ran is not known yet.', { sideEffects: 'possible', details: { source: 'bridge' } })
    : new WireError('device_offline', "The device's session was gone at the bridge deadline; whether the call ran is not known yet.", { sideEffects: 'possible', details: { source: 'bridge' } });
  return bridgeOutcome(call, 'unknown', err);
}

/** The bridge's outcome for a call a reconnected device never saw, past its deadline: `expired`. */
export function neverReceivedOutcome(call: StoredCall): Outcome {
  return bridgeOutcome(call, 'expired', new WireError('call_expired', 'The call could not reach the device before its deadline.'));
}

/**
 * True when a call that already has an outcome takes no other: a second bridge outcome, a device outcome for a
 * call the device already answered, a resolved `unknown`, or one already keeping a device outcome beside.
 */
export function outcomeIsFinal(call: StoredCall, byBridge: boolean): boolean {
  return byBridge || !call.bridge_outcome || Boolean(call.resolved_from) || Boolean(call.device_outcome);
}

/** How a taken outcome changed its record: a first outcome, a resolved `unknown`, or a device outcome kept beside. */
export type Applied = 'new' | 'resolved' | 'beside';

/** A terminal outcome taken, not yet applied. `derive`: it came on a 1.1+ session (states may lack notes, §6.2). */
export interface PendingOutcome {
  o: Outcome;
  byBridge: boolean;
  derive: boolean;
}

/**
 * Applies a terminal outcome to the record; says how, or false when it changes nothing. A device outcome never
 * replaces another device outcome; a committed bridge `unknown` is resolved once by the device's (§6.8,
 * `resolved_from`); any other committed bridge outcome keeps the device's beside as `device_outcome`.
 */
export function applyOutcome(call: StoredCall, p: PendingOutcome): Applied | false {
  const { o, byBridge, derive } = p;
  const now = new Date().toISOString();
  if (call.outcome) {
    if (outcomeIsFinal(call, byBridge)) return false;
    if (call.state !== 'unknown') {
      call.device_outcome = { ...o, replayed: false };
      call.updated_at = now;
      return 'beside';
    }
    const issued = [...call.timeline].reverse().find((t) => t.state === 'unknown');
    call.resolved_from = { state: 'unknown', at: issued?.at ?? call.outcome.finished_at ?? call.updated_at };
    call.outcome = { ...o, replayed: false };
    call.bridge_outcome = false;
    call.timeline.push({ state: o.state, at: now });
    call.state = o.state;
    call.updated_at = now;
    return 'resolved';
  }
  call.outcome = { ...o, replayed: false };
  call.bridge_outcome = byBridge;
  if (call.state !== o.state) call.timeline.push({ state: o.state, at: o.finished_at ?? now });
  if (derive && !byBridge) call.timeline = withDerivedStates(call.timeline, o);
  call.state = o.state;
  call.updated_at = now;
  return 'new';
}

/** The states a device's note may report (a terminal state travels in the outcome, never in a note). */
export const DEVICE_NOTE_STATES: ReadonlySet<string> = new Set(['accepted', 'awaiting_confirmation', 'running']);

/** True when a `call.state` note's state is news for the record (a repeated note adds nothing). */
export function isNewNoteState(call: StoredCall, state: string, at: unknown): at is string {
  return !call.outcome && DEVICE_NOTE_STATES.has(state) && typeof at === 'string' && call.state !== state && !call.timeline.some((t) => t.state === state);
}

/** The last session event in a timeline, if any. */
export function lastEvent(timeline: readonly TimelineEntry[]): SessionEventName | undefined {
  for (let i = timeline.length - 1; i >= 0; i--) {
    const t = timeline[i]!;
    if (!isStateEntry(t)) return t.event;
  }
  return undefined;
}

/** True when a session event is news for a waiting call: `device_online` only after a recorded `device_offline`, and never twice in a row. */
export function takesSessionEvent(call: StoredCall, event: SessionEventName): boolean {
  const last = lastEvent(call.timeline);
  return event === 'device_online' ? last === 'device_offline' : last !== 'device_offline';
}

/** Where each state sits in a call's life (§6.2); the terminal ones share the last place. */
const STATE_RANK: Record<string, number> = { submitted: 0, accepted: 1, awaiting_confirmation: 2, running: 3 };
const rank = (s: string): number => STATE_RANK[s] ?? 4;

/**
 * The timeline with the states a 1.1 device sent no note for, taken from the outcome's `accepted_at` and
 * `started_at` and marked derived, in the order of a call's life. `awaiting_confirmation` is never derived:
 * a device always sends it, and the outcome has no time for it.
 */
export function withDerivedStates(timeline: readonly TimelineEntry[], o: Outcome): TimelineEntry[] {
  const add: TimelineEntry[] = [];
  for (const [state, at] of [['accepted', o.accepted_at], ['running', o.started_at]] as const) {
    if (typeof at === 'string' && at && !timeline.some((t) => t.state === state)) add.push({ state, at, derived: true });
  }
  if (!add.length) return [...timeline];
  // A stable sort: entries of the same rank keep the order the bridge recorded them in.
  return [...timeline, ...add].sort((a, b) => rank(a.state ?? '') - rank(b.state ?? ''));
}

/** True when a session's identity is the one the call was sent to: its workspace, user and device. */
export function owns(id: DeviceIdentity, call: StoredCall): boolean {
  return id.workspace_id === call.workspace_id && id.device_id === call.device_id && id.user_id === call.params.user_id;
}

/** True when a device's answer names this call and its function. */
export function answers(o: Outcome, call: StoredCall): boolean {
  return typeof o === 'object' && o !== null && o.call_id === call.call_id && o.function === call.function;
}

/** An invoke for a 1.0/1.1 session: those never carry `runtime` (§6.1, "Changes" 1.2). */
export function withoutRuntime(p: InvokeParams): InvokeParams {
  if (!p.runtime) return p;
  const { runtime: _r, ...rest } = p;
  return rest;
}
