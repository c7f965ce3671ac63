/**
 * The first half of §6.1's policy step: the resources a call touches, from its function's
 * `resources()`, checked against the live grants before anyone is asked.
 */
import { WireError } from '../protocol/errors.js';
import { NO_GRANTS, type CallResource } from '../sdk/index.js';
import type { GrantStore } from '../grants/grant-store.js';
import type { RegisteredFunction } from './registry.js';
import type { ConsentResource } from '../seams/call-seams.js';

/** A call's resources as checked before consent, and the lock keys they give. */
export interface Resolved {
  resources: ConsentResource[];
  locks: readonly string[];
}

/**
 * Runs the function's `resources()` and checks each resource of a declared grant kind against the
 * live grants (whatever the handler checked itself): outside every grant, read-only for a write, or
 * refused by the kind's `validate` (a path that is not a device), throws `permission_denied`. The grant's alias labels it and its `ask: always` carries over.
 * `showGrants`: only built-in handlers see the grants in `resources()`.
 */
export async function resolveResources(reg: RegisteredFunction, args: Record<string, unknown>, grants: GrantStore | undefined, showGrants: boolean): Promise<Resolved> {
  const def = reg.def;
  const d = reg.descriptor;
  if (!def.resources) return { resources: [], locks: d.locks };
  const r = def.resources(args, { grants: grants && showGrants ? grants : NO_GRANTS });
  const list: readonly CallResource[] = r instanceof Promise ? await r : r;
  const resources: ConsentResource[] = [];
  const locks: string[] = [];
  for (const x of list) {
    const writes = x.access ? x.access === 'write' : !(d.risk?.read_only ?? false);
    const c = grants?.check(x, writes);
    if (c && 'refused' in c) throw new WireError('permission_denied', c.refused, { details: { reason: 'not_granted', kind: x.kind } });
    const g = c?.grant;
    // The kind's own rule on what a grant may cover (a `*` serial grant: only ports the OS lists), before
    // any prompt and before the handler opens anything.
    const validate = g ? grants?.kindOf(x.kind)?.validate : undefined;
    if (g && validate) {
      const v = await validate(x.id, g);
      if (v) throw new WireError('permission_denied', v.message, { details: { reason: 'not_a_device', kind: x.kind, rule: v.rule } });
    }
    const label = x.label ?? g?.alias;
    const ask = x.ask ?? g?.ask;
    resources.push({ kind: x.kind, id: x.id, granted: g !== undefined, ...(label !== undefined ? { label } : {}), ...(ask ? { ask } : {}) });
    if (x.lock !== false) locks.push(x.lock ?? `${x.kind}:${x.id}`);
  }
  return { resources, locks: [...new Set(locks)] };
}
