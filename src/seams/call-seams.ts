/**
 * Seams between the call path (dispatcher) and the subsystems that plug into it: consent and audit.
 * The dispatcher depends only on these interfaces; `src/consent/` implements them.
 */
import type { AttestedRuntime, Descriptor, Requester, ConfirmationInfo, Outcome } from '../protocol/messages.js';
import { WireError } from '../protocol/errors.js';
import type { Message as SaidMessage } from '../i18n/catalogue.js';

/** What the dispatcher asks the consent gate about one accepted call. */
export interface ConsentRequest {
  readonly callId: string;
  readonly descriptor: Descriptor;
  /** Validated arguments (the prompt may show them on demand; never logged). */
  readonly args: Record<string, unknown>;
  /** One sentence from the handler's `describe()` (or a generic one), rendered in the agent's locale. */
  readonly summary: string;
  /**
   * The same sentence as a catalogue message (key + params) for each surface to render in its own
   * language; absent when `describe()` returned a plain string (a third-party adapter's own words).
   */
  readonly said?: SaidMessage | undefined;
  /** True when the sentence is a third-party adapter's plain string, shown as written. */
  readonly ownWords?: boolean | undefined;
  /** The catalogue key of the function's title (a built-in function's; absent for an adapter's). */
  readonly titleKey?: string | undefined;
  /**
   * Scope for remembered decisions: the resource set the prompt shows (`resourceScope`), '*' when the
   * call has none.
   */
  readonly resource: string;
  /** The resources the call touches, checked against the grants before consent (empty when none). */
  readonly resources?: readonly ConsentResource[];
  /** Who the runtime says it is (its own claim, protocol §3.3). */
  readonly requester: Requester | undefined;
  /** The runtime the bridge attested from its token (protocol 1.2 §6.1); absent on a 1.1 session. */
  readonly runtime?: AttestedRuntime | undefined;
  readonly workspaceId: string;
  readonly userId: string;
  /** How long a prompt may wait for the user (confirm_timeout_ms). */
  readonly timeoutMs: number;
}

/** One resource of a call as consent sees it (after the grant check). */
export interface ConsentResource {
  readonly kind: string;
  readonly id: string;
  /** What people see (the grant's alias), when it has one. */
  readonly label?: string;
  /** True when a grant covers it (a resource of a kind nobody declared is never granted). */
  readonly granted: boolean;
  /** `always`: the call asks whatever its level. */
  readonly ask?: 'always';
}

/**
 * The scope key of a remembered decision for a call's resources: `kind:id` of each, sorted, one per
 * line (so a decision on a move from A to B covers exactly A and B); '*' for a call with none.
 */
export function resourceScope(resources: readonly Pick<ConsentResource, 'kind' | 'id'>[]): string {
  if (!resources.length) return '*';
  return [...new Set(resources.map((r) => `${r.kind}:${r.id}`))].sort().join('\n');
}

/** The gate's answer. `error` is set exactly when the call must not run. */
export interface ConsentDecision {
  readonly confirmation: ConfirmationInfo;
  /** user_rejected | confirmation_timeout | confirmation_unavailable | permission_denied (policy deny). */
  readonly error?: WireError;
}

/** Decides allow / ask / deny for a call, prompting the user when needed. */
export interface ConsentGate {
  /**
   * The decision at once when nobody needs to be asked (allow, deny, or no way to ask); undefined when
   * the user will be asked: the dispatcher then enters `awaiting_confirmation` and calls `decide`.
   * Must not prompt or block.
   */
  decideNow(req: ConsentRequest): ConsentDecision | undefined;
  /** Decides; `signal` fires when the call is cancelled (the prompt must be withdrawn at once). */
  decide(req: ConsentRequest, signal: AbortSignal): Promise<ConsentDecision>;
  /** True while the user has paused all calls. */
  isPaused(): boolean;
  /** True when the function is disabled by config or the user (answered as unknown_function). */
  isDisabled(functionId: string): boolean;
}

/** What the dispatcher reports for every finished call, including calls refused before acceptance. */
export interface FinishedCall {
  outcome: Outcome;
  /** Undefined when the function is unknown. */
  descriptor: Descriptor | undefined;
  /** Validated arguments; undefined when the function is unknown. Never logged as they are. */
  args: Record<string, unknown> | undefined;
  requester: Requester | undefined;
  /** The runtime the bridge attests (protocol 1.2 §6.1); undefined on a 1.0/1.1 session (unverified). */
  runtime?: AttestedRuntime | undefined;
  workspaceId: string;
  userId: string;
  /** The resources the call touched, as checked before consent (absent when it got no further). */
  resources?: readonly ConsentResource[];
}

/** Receives every finished call (for the audit trail and metrics). */
export interface CallObserver {
  onFinished(entry: FinishedCall): void;
}
