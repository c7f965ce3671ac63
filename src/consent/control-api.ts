/**
 * The consent handlers of the control API (src/control/api.ts), which the tray / local web UI
 * calls over the local endpoint's JSON-RPC (PROTOCOL.md §8): status, pause/resume, the prompt queue,
 * remembered decisions, the live grants and the activity log. Params arrive checked (src/control/server.ts).
 */
import { RPC, RpcError, WireError } from '../protocol/errors.js';
import { parseSince, type AuditLog } from './audit-log.js';
import type { ConsentStatus } from './consent-status.js';
import type { DecisionsStore } from './decisions-store.js';
import type { PromptQueue } from './prompt-queue.js';
import type { UiPromptProvider } from './providers/ui.js';
import type { RecentSentences } from './recent-sentences.js';
import type { ControlEvents } from './control-events.js';
import { GrantError, type GrantStore } from '../grants/grant-store.js';
import { CONTROL_EVENTS } from './control-events.js';

/** The consent pieces the control handlers work on (built together in src/app/consent-parts.ts). */
export interface ConsentControls {
  status(): ConsentStatus;
  /** Pauses all calls; `by` says who (ui, tray). */
  pause(by: string): ConsentStatus;
  resume(): ConsentStatus;
  queue: Pick<PromptQueue, 'list' | 'argumentsOf'>;
  ui: Pick<UiPromptProvider, 'answer' | 'attach' | 'heartbeat' | 'detach' | 'setFocused'>;
  decisions: Pick<DecisionsStore, 'list' | 'revoke'>;
  audit: Pick<AuditLog, 'list'>;
  sentences: Pick<RecentSentences, 'sentenceOf' | 'messageOf'>;
  events: ControlEvents;
}
import { serveControlApi, type ControlHandlers, type ControlMethods } from '../control/server.js';

export type { ControlContext, ControlMethods } from '../control/server.js';

function bad(message: string): never {
  throw new RpcError(RPC.invalid_params, message);
}

/** The `since` filter as the CLI takes it ("2h", "7d" or an ISO time); a bad one is invalid params. */
function sinceOf(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  try {
    return parseSince(v);
  } catch (e) {
    return bad((e as Error).message);
  }
}

/** The `until` filter: an ISO time (a duration would mean "until N ago", which nobody asks for). */
function untilOf(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) bad(`until: "${v}" is not a time`);
  return new Date(ms).toISOString();
}

/**
 * Runs a grant change; a refused one is invalid params saying why (and naming the key), or
 * `permission_denied` (reason `admin_ceiling`) for a valid entry the admin config does not allow.
 */
function grantChange<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof GrantError && e.reason === 'ceiling') throw new WireError('permission_denied', e.message, { details: { reason: 'admin_ceiling' } });
    if (e instanceof GrantError) bad(e.message);
    throw e;
  }
}

/** The largest grant entry accepted (one entry as `grants.<kind>` takes it). */
const MAX_ENTRY_BYTES = 8192;

/** The consent control handlers (and the live grants', when given), by the control API's keys. */
export function consentControlHandlers(svc: ConsentControls, grants?: GrantStore): ControlHandlers {
  return {
    status: () => svc.status(),
    pause: () => svc.pause('ui'),
    resume: () => svc.resume(),
    listPrompts: () => ({
      prompts: svc.queue.list().map((q) => ({ ...q.view, active: q.active, position: q.position })),
    }),
    promptArguments: ({ prompt_id }) => {
      const args = svc.queue.argumentsOf(prompt_id);
      if (!args) bad('no such prompt');
      return { prompt_id, arguments: args };
    },
    answerPrompt: ({ prompt_id, answer, scope, resource_scope }) => {
      const ok = svc.ui.answer(
        prompt_id,
        // Defaults as docs/consent.md and the terminal prompt have them: a remembered deny lasts until revoked.
        answer === 'close'
          ? 'closed'
          : {
              answer,
              scope: scope ?? (answer === 'deny_remember' ? 'always' : 'session'),
              ...(resource_scope ? { resource_scope } : {}),
            },
      );
      if (!ok) bad('no such prompt is showing (it may have been answered, withdrawn or timed out)');
      return { ok: true };
    },
    // One way to be the one who answers prompts: attach, then heartbeat (PROTOCOL.md §8, docs/consent.md).
    attachAnswerer: ({ name }, ctx) => svc.ui.attach(name ?? 'ui', ctx.onClose),
    heartbeat: ({ answerer_id }) => ({ ok: svc.ui.heartbeat(answerer_id) }),
    detachAnswerer: ({ answerer_id }) => ({ detached: svc.ui.detach(answerer_id) }),
    setFocused: ({ focused }) => {
      svc.ui.setFocused(focused === true);
      return { ok: true };
    },
    listDecisions: (p) => ({ decisions: svc.decisions.list({ effect: p.effect, functionId: p.function }) }),
    revokeDecision: ({ id }) => ({ revoked: svc.decisions.revoke(id) }),
    ...(grants
      ? {
          // The live grants: config (the ceiling) plus the user's changes, persisted in the data folder.
          // `ceilings`: the admin config's grants for the kinds it names (a user may narrow them, never widen).
          listGrants: ({ kind }) => ({ kinds: grants.kindNames(), grants: kind ? { [kind]: grants.list(kind) } : grants.snapshot(), ceilings: grants.ceilings() }),
          addGrant: ({ kind, entry }) => {
            if (JSON.stringify(entry).length > MAX_ENTRY_BYTES) bad('entry is too large');
            const grant = grantChange(() => grants.add(kind, entry));
            svc.events.emit(CONTROL_EVENTS.grants, { kind });
            return { grant };
          },
          removeGrant: ({ kind, id }) => {
            const removed = grants.remove(kind, id);
            if (removed) svc.events.emit(CONTROL_EVENTS.grants, { kind });
            return { removed };
          },
        } satisfies ControlHandlers
      : {}),
    listActivity: (p) => ({
      // A call that was put to the user also carries the sentence its prompt showed (kept in memory only).
      calls: svc.audit
        .list({ functionId: p.function, state: p.state, since: sinceOf(p.since), until: untilOf(p.until), requester: p.requester, limit: p.limit })
        .map((c) => {
          const sentence = svc.sentences.sentenceOf(c.call_id);
          const message = svc.sentences.messageOf(c.call_id);
          return sentence ? { ...c, sentence, ...(message ? { sentence_message: message } : {}) } : c;
        }),
    }),
  };
}

/**
 * The control methods over the consent pieces (and the live grants, when given), by wire name: each
 * needs the local token and has its params checked (src/control/server.ts). No call marks a UI present
 * except `control.prompts.attach` (a status poll must not draw prompts).
 */
export function createControlMethods(svc: ConsentControls, grants?: GrantStore): ControlMethods {
  return serveControlApi(consentControlHandlers(svc, grants));
}
