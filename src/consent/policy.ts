/**
 * The consent policy: a pure function from a function's descriptor, the administrator's policy, the
 * user's remembered decision, the user's grants and the pause switch to allow, ask or deny.
 * See docs/consent.md for the table this implements.
 */
import type { Descriptor, PermissionLevel } from '../protocol/messages.js';
import { coreMessage, strings, type Message } from '../i18n/index.js';

/** An administrator's pre-decision for one function id (config `policy`). */
export type AdminRule = 'allow' | 'ask' | 'deny';
/** The config `policy` section: function id → rule. */
export type AdminPolicy = Readonly<Record<string, AdminRule>>;

/** The parts of a descriptor the policy reads. */
export type PolicyDescriptor = Pick<Descriptor, 'id' | 'permission_level' | 'confirmation'> & { risk?: Descriptor['risk'] };

/** Everything the policy decides from. */
export interface PolicyInput {
  descriptor: PolicyDescriptor;
  /** The resource the call touches (handler's `resource()`), '*' when none. */
  resource: string;
  adminPolicy: AdminPolicy;
  /** The user's remembered decision for this function and resource, if any. */
  remembered: { effect: 'allow' | 'deny' } | undefined;
  /** True when the user has shared this resource with the agent (every resource of the call is granted). */
  isResourceGranted: (functionId: string, resource: string) => boolean;
  /** A grant the call touches says `ask: always`: the call asks, whatever its level, and is never remembered. */
  askAlways?: boolean;
  paused: boolean;
}

/** The policy's answer. */
export type PolicyVerdict =
  | { action: 'allow'; by: 'policy' | 'remembered'; required: boolean; reason: string }
  | {
      action: 'deny';
      by: 'policy' | 'remembered' | 'system';
      error: 'paused' | 'permission_denied' | 'user_rejected';
      required: boolean;
      reason: string;
    }
  | { action: 'ask'; rememberable: boolean; reason: string };

/**
 * The level the defaults apply to: a destructive function (or one whose descriptor omits `risk`, which
 * PROTOCOL.md §4 says to treat as destructive) is handled as at least `medium`.
 */
export function effectiveLevel(d: PolicyDescriptor): PermissionLevel {
  const destructive = d.risk ? d.risk.destructive : true;
  if (destructive && (d.permission_level === 'public' || d.permission_level === 'low')) return 'medium';
  return d.permission_level;
}

/** True when every call must be confirmed by a person: `critical`, or `confirmation: always`. */
export function alwaysAsks(d: PolicyDescriptor): boolean {
  return d.permission_level === 'critical' || d.confirmation === 'always';
}

/** What the built-in defaults say, before admin policy and remembered decisions. */
function byDefault(i: PolicyInput): PolicyVerdict {
  const d = i.descriptor;
  switch (effectiveLevel(d)) {
    case 'public':
    case 'low':
      return { action: 'allow', by: 'policy', required: false, reason: 'low-risk function' };
    case 'medium':
      if (i.isResourceGranted(d.id, i.resource)) {
        return { action: 'allow', by: 'policy', required: false, reason: 'resource granted by the user' };
      }
      if (d.confirmation === 'never') {
        return { action: 'deny', by: 'policy', error: 'permission_denied', required: false, reason: 'resource not granted' };
      }
      return { action: 'ask', rememberable: true, reason: 'resource not granted yet' };
    default:
      // high (and critical, handled earlier): `confirmation: never` cannot lower a high function.
      return { action: 'ask', rememberable: true, reason: 'high-risk function' };
  }
}

/** Decides allow / ask / deny for one call. Pure: no I/O, no clock. */
export function decidePolicy(i: PolicyInput): PolicyVerdict {
  const d = i.descriptor;
  const rule = i.adminPolicy[d.id];
  if (i.paused) return { action: 'deny', by: 'system', error: 'paused', required: false, reason: 'calls are paused' };
  if (rule === 'deny') {
    return { action: 'deny', by: 'policy', error: 'permission_denied', required: false, reason: 'denied by the administrator' };
  }
  if (alwaysAsks(d)) {
    return { action: 'ask', rememberable: false, reason: d.permission_level === 'critical' ? 'critical function' : 'function always asks' };
  }
  if (i.askAlways) return { action: 'ask', rememberable: false, reason: 'the grant says ask always' };
  if (i.remembered?.effect === 'deny') {
    return { action: 'deny', by: 'remembered', error: 'user_rejected', required: true, reason: 'denied earlier by the user' };
  }
  const base = byDefault(i);
  if (rule === 'allow') {
    return { action: 'allow', by: 'policy', required: base.action !== 'allow', reason: 'allowed by the administrator' };
  }
  if (i.remembered?.effect === 'allow') {
    return { action: 'allow', by: 'remembered', required: true, reason: 'allowed earlier by the user' };
  }
  if (rule === 'ask') return { action: 'ask', rememberable: true, reason: 'the administrator wants the user to decide' };
  return base;
}

/**
 * Config errors in `policy` against the registered functions: a `critical` function, or one whose
 * confirmation is `always`, can never be pre-allowed (the entry could not take effect). Returns one catalogue message per offending key (empty when fine), to say in any language.
 */
export function adminPolicyProblems(policy: AdminPolicy, descriptors: Iterable<PolicyDescriptor>): Message[] {
  const errors: Message[] = [];
  for (const d of descriptors) {
    const rule = policy[d.id];
    if (rule === 'allow' && d.permission_level === 'critical') errors.push(coreMessage('core.policy.critical_allow', { id: d.id }));
    else if (rule === 'allow' && d.confirmation === 'always') errors.push(coreMessage('core.policy.always_allow', { id: d.id }));
  }
  for (const [id, rule] of Object.entries(policy)) {
    if (rule !== 'allow' && rule !== 'ask' && rule !== 'deny') errors.push(coreMessage('core.policy.bad_rule', { id }));
  }
  return errors;
}

/** {@link adminPolicyProblems} in English. */
export function checkAdminPolicy(policy: AdminPolicy, descriptors: Iterable<PolicyDescriptor>): string[] {
  return adminPolicyProblems(policy, descriptors).map((m) => strings.render(m, 'en'));
}
