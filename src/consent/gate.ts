/**
 * The consent gate: the dispatcher's ConsentGate. It decides each call from the admin policy, the
 * remembered decisions and the pause switch, and asks the user through the prompt queue when the
 * policy says ask. It opens nothing and starts nothing: the composition root (src/app/consent-parts.ts)
 * builds it over the pieces it reads.
 */
import { randomUUID } from 'node:crypto';
import type { ConsentDecision, ConsentGate, ConsentRequest } from '../seams/call-seams.js';
import type { ConfirmationInfo } from '../protocol/messages.js';
import { WireError } from '../protocol/errors.js';
import type { Logger } from '../base/logger.js';
import type { DecisionsStore } from './decisions-store.js';
import { decidePolicy, type AdminPolicy, type PolicyVerdict } from './policy.js';
import type { PromptQueue } from './prompt-queue.js';
import type { PromptResult, PromptView } from './prompt.js';
import type { RecentSentences } from './recent-sentences.js';

/** How long a prompt waits when the call names no confirm_timeout_ms, by default. */
export const DEFAULT_CONFIRM_TIMEOUT_MS = 60_000;

/** What the gate reads. */
export interface PolicyGateParts {
  /** The admin config's `policy`. */
  policy: AdminPolicy;
  /** How long a prompt waits when the call names no timeout (ms). */
  timeoutMs: number;
  decisions: Pick<DecisionsStore, 'lookup' | 'remember'>;
  pause: { isPaused(): boolean };
  queue: Pick<PromptQueue, 'ask' | 'canShow'>;
  /** Where the sentence of each prompted call is kept for the activity list. */
  sentences: Pick<RecentSentences, 'remember'>;
  /** Whether a function is off (the config's `functions.disabled` and the user's Settings, live). */
  isDisabled: (functionId: string) => boolean;
  /**
   * Whether a call that names no checked resources (`ConsentRequest.resources` absent) is on a granted
   * resource; default: never (such a `medium` call asks).
   */
  isResourceGranted?: (functionId: string, resource: string) => boolean;
  log?: Logger;
}

const info = (c: ConfirmationInfo): ConfirmationInfo => c;
/** Shared by every call that needed no confirmation (outcomes are never changed after they are built). */
const NOT_REQUIRED: ConfirmationInfo = Object.freeze(info({ required: false, decision: 'not_required', decided_by: 'policy', remembered: false }));
const DENIED_MESSAGES = {
  paused: 'The user has paused all calls on this device.',
  permission_denied: 'This function is not allowed on this device for this resource.',
  user_rejected: 'The user declined this call earlier and asked to remember that.',
} as const;

/** Decides allow / ask / deny for each call, prompting the user when the policy says ask. */
export class PolicyGate implements ConsentGate {
  private readonly granted: (functionId: string, resource: string) => boolean;

  constructor(private readonly parts: PolicyGateParts) {
    this.granted = parts.isResourceGranted ?? (() => false);
  }

  private verdict(req: ConsentRequest): PolicyVerdict {
    const d = req.descriptor;
    const rs = req.resources;
    // Checked resources (the dispatcher refused the call before consent if one was outside every
    // grant): granted when there is at least one and a grant covers each.
    const granted = rs ? rs.length > 0 && rs.every((r) => r.granted) : undefined;
    return decidePolicy({
      descriptor: d,
      resource: req.resource,
      adminPolicy: this.parts.policy,
      remembered: this.parts.decisions.lookup(req.userId, d.id, req.resource),
      isResourceGranted: (f, r) => granted ?? this.granted(f, r),
      askAlways: rs?.some((r) => r.ask === 'always') ?? false,
      paused: this.isPaused(),
    });
  }

  /** True when a call like this would wait for the user now (nobody can decide it at once). */
  needsPrompt(req: ConsentRequest): boolean {
    return this.decideNow(req) === undefined;
  }

  decideNow(req: ConsentRequest): ConsentDecision | undefined {
    const v = this.verdict(req);
    if (v.action !== 'ask') return this.settled(v);
    return this.parts.queue.canShow() ? undefined : this.unavailable();
  }

  /** The decision for a verdict that needs nobody to be asked. */
  private settled(v: Exclude<PolicyVerdict, { action: 'ask' }>): ConsentDecision {
    if (v.action === 'allow') {
      return {
        confirmation: v.required
          ? info({ required: true, decision: 'allowed', decided_by: v.by, remembered: v.by === 'remembered' })
          : NOT_REQUIRED,
      };
    }
    return {
      confirmation: info({ required: v.required, decision: 'denied', decided_by: v.by, remembered: v.by === 'remembered' }),
      error: new WireError(v.error, DENIED_MESSAGES[v.error]),
    };
  }

  async decide(req: ConsentRequest, signal: AbortSignal): Promise<ConsentDecision> {
    const v = this.verdict(req);
    if (v.action !== 'ask') return this.settled(v);
    if (signal.aborted) return this.withdrawn();
    if (!this.parts.queue.canShow()) return this.unavailable();

    const timeoutMs = req.timeoutMs > 0 ? req.timeoutMs : this.parts.timeoutMs;
    const now = Date.now();
    const view: PromptView = {
      prompt_id: randomUUID(),
      call_id: req.callId,
      function_id: req.descriptor.id,
      function_name: req.descriptor.name,
      sentence: req.summary,
      ...(req.titleKey ? { title_key: req.titleKey } : {}),
      ...(req.said ? { sentence_message: req.said } : {}),
      ...(req.ownWords ? { sentence_own_words: true } : {}),
      requester: req.requester ?? null,
      runtime: req.runtime ?? null,
      workspace_id: req.workspaceId,
      user_id: req.userId,
      permission_level: req.descriptor.permission_level,
      risk: req.descriptor.risk ?? null,
      resource: req.resource,
      resources: (req.resources ?? []).map((r) => ({ kind: r.kind, id: r.id, ...(r.label !== undefined ? { label: r.label } : {}) })),
      // "Any" (remember for every resource of this function) is offered only when the call names resources.
      remember_any: v.rememberable && (req.resources?.length ?? 0) > 0,
      rememberable: v.rememberable,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + timeoutMs).toISOString(),
    };
    this.parts.sentences.remember(req.callId, { sentence: req.summary, ...(req.said ? { message: req.said } : {}) });
    const r = await this.parts.queue.ask(view, req.args, timeoutMs, signal);
    const decision = this.fromPrompt(r, req, v.rememberable, view.remember_any);
    this.parts.log?.info(
      { call_id: req.callId, function: req.descriptor.id, decision: decision.confirmation.decision, remembered: decision.confirmation.remembered },
      'consent decided by prompt',
    );
    return decision;
  }

  private fromPrompt(r: PromptResult, req: ConsentRequest, rememberable: boolean, anyOffered: boolean): ConsentDecision {
    switch (r.kind) {
      case 'withdrawn': return this.withdrawn();
      case 'unavailable': return this.unavailable();
      case 'timeout':
        return {
          confirmation: info({ required: true, decision: 'timeout', decided_by: 'system', remembered: false }),
          error: new WireError('confirmation_timeout', 'Nobody answered the confirmation prompt in time.'),
        };
      case 'closed':
        return {
          confirmation: info({ required: true, decision: 'denied', decided_by: 'user', remembered: false }),
          error: new WireError('user_rejected', 'The user closed the confirmation prompt without allowing the call.'),
        };
      case 'answer': {
        const a = r.answer.answer;
        const remember = rememberable && (a === 'allow_remember' || a === 'deny_remember');
        const allow = a === 'allow_once' || a === 'allow_remember';
        if (remember) {
          this.parts.decisions.remember({
            userId: req.userId,
            functionId: req.descriptor.id,
            // The resources the prompt showed; every resource only when the user chose "any".
            resource: anyOffered && r.answer.resource_scope === 'any' ? '*' : req.resource,
            effect: allow ? 'allow' : 'deny',
            scope: r.answer.scope ?? 'session',
          });
        }
        const confirmation = info({ required: true, decision: allow ? 'allowed' : 'denied', decided_by: 'user', remembered: remember });
        return allow
          ? { confirmation }
          : { confirmation, error: new WireError('user_rejected', 'The user declined this call.') };
      }
    }
  }

  private withdrawn(): ConsentDecision {
    return {
      confirmation: info({ required: true, decision: 'withdrawn', decided_by: 'system', remembered: false }),
      error: new WireError('cancelled', 'The call was cancelled while waiting for confirmation.', { sideEffects: 'none' }),
    };
  }

  private unavailable(): ConsentDecision {
    return {
      confirmation: info({ required: true, decision: 'unavailable', decided_by: 'system', remembered: false }),
      error: new WireError('confirmation_unavailable', 'This call needs the user to confirm it, and no prompt can be shown.'),
    };
  }

  isPaused(): boolean {
    return this.parts.pause.isPaused();
  }

  isDisabled(functionId: string): boolean {
    return this.parts.isDisabled(functionId);
  }
}
