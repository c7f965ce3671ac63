/**
 * The control methods the tray / local web UI calls over the local endpoint's JSON-RPC (PROTOCOL.md §8):
 * status, pause/resume, the prompt queue, remembered decisions and the activity log. Every method
 * requires the local token; the endpoint passes `ctx.authenticated`.
 */
import { RPC, RpcError, WireError } from '../protocol/errors.js';
import { ANSWER_KINDS, type PromptAnswerKind } from './prompt.js';
import type { ConsentService } from './gate.js';
import type { DecisionScope } from './decisions-store.js';
import { parseSince } from './audit-log.js';
import { GrantError, type GrantStore } from '../grants/grant-store.js';
import { CONTROL_EVENTS } from './control-events.js';

/** Per-request context from the local endpoint. */
export interface ControlContext {
  readonly authenticated: boolean;
  /** Present on `WS /rpc`: a connection's notify function, stable for the connection. */
  readonly notify?: (method: string, params: unknown) => void;
  /** Present on `WS /rpc`: runs the callback when the connection ends. */
  readonly onClose?: (cb: () => void) => void;
}

/** A JSON-RPC method table, as `LocalEndpoint.addMethods` takes it. */
export type ControlMethods = Record<string, (params: unknown, ctx: ControlContext) => Promise<unknown>>;

const obj = (p: unknown): Record<string, unknown> =>
  p === undefined || p === null ? {} : typeof p === 'object' && !Array.isArray(p) ? (p as Record<string, unknown>) : bad('params must be an object');

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

const optStr = (p: Record<string, unknown>, k: string): string | undefined => {
  const v = p[k];
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : bad(`${k} must be a string`);
};

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

/** Builds the control method table over a consent service (and the live grants, when given). */
export function createControlMethods(svc: ConsentService, grants?: GrantStore): ControlMethods {
  const methods: Record<string, (p: Record<string, unknown>, ctx: ControlContext) => unknown> = {
    'control.status': () => svc.status(),
    'control.pause': () => svc.pause('ui'),
    'control.resume': () => svc.resume(),
    'control.prompts.list': () => ({
      prompts: svc.queue.list().map((q) => ({ ...q.view, active: q.active, position: q.position })),
    }),
    'control.prompts.arguments': (p) => {
      const id = optStr(p, 'prompt_id') ?? bad('prompt_id is required');
      const args = svc.queue.argumentsOf(id);
      if (!args) bad('no such prompt');
      return { prompt_id: id, arguments: args };
    },
    'control.prompts.answer': (p) => {
      const id = optStr(p, 'prompt_id') ?? bad('prompt_id is required');
      const answer = optStr(p, 'answer');
      if (answer !== 'close' && !ANSWER_KINDS.includes(answer as PromptAnswerKind)) {
        bad('answer must be allow_once, allow_remember, deny, deny_remember or close');
      }
      const scope = optStr(p, 'scope');
      if (scope !== undefined && scope !== 'session' && scope !== 'always') bad('scope must be session or always');
      const resourceScope = optStr(p, 'resource_scope');
      if (resourceScope !== undefined && resourceScope !== 'shown' && resourceScope !== 'any') bad('resource_scope must be shown or any');
      const ok = svc.ui.answer(
        id,
        // Defaults as docs/consent.md and the terminal prompt have them: a remembered deny lasts until revoked.
        answer === 'close'
          ? 'closed'
          : {
              answer: answer as PromptAnswerKind,
              scope: (scope as DecisionScope | undefined) ?? (answer === 'deny_remember' ? 'always' : 'session'),
              ...(resourceScope ? { resource_scope: resourceScope } : {}),
            },
      );
      if (!ok) bad('no such prompt is showing (it may have been answered, withdrawn or timed out)');
      return { ok: true };
    },
    // One way to be the one who answers prompts: attach, then heartbeat (PROTOCOL.md §8, docs/consent.md).
    'control.prompts.attach': (p, ctx) => {
      const name = optStr(p, 'name') ?? 'ui';
      return svc.ui.attach(name.slice(0, 100), ctx.onClose);
    },
    'control.prompts.heartbeat': (p) => {
      const id = optStr(p, 'answerer_id') ?? bad('answerer_id is required');
      return { ok: svc.ui.heartbeat(id) };
    },
    'control.prompts.detach': (p) => {
      const id = optStr(p, 'answerer_id') ?? bad('answerer_id is required');
      return { detached: svc.ui.detach(id) };
    },
    'control.ui.focus': (p) => {
      svc.ui.setFocused(p['focused'] === true);
      return { ok: true };
    },
    'control.decisions.list': (p) => {
      const effect = optStr(p, 'effect');
      if (effect !== undefined && effect !== 'allow' && effect !== 'deny') bad('effect must be allow or deny');
      return { decisions: svc.decisions.list({ effect, functionId: optStr(p, 'function') }) };
    },
    'control.decisions.revoke': (p) => {
      const id = p['id'];
      if (typeof id !== 'number' || !Number.isInteger(id)) bad('id must be an integer');
      return { revoked: svc.decisions.revoke(id) };
    },
    ...(grants
      ? {
          // The live grants: config (the ceiling) plus the user's changes, persisted in the data folder.
          'control.grants.list': (p: Record<string, unknown>) => {
            const kind = optStr(p, 'kind');
            // `ceilings`: the admin config's grants for the kinds it names (a user may narrow them, never widen).
            return { kinds: grants.kindNames(), grants: kind ? { [kind]: grants.list(kind) } : grants.snapshot(), ceilings: grants.ceilings() };
          },
          'control.grants.add': (p: Record<string, unknown>) => {
            const kind = optStr(p, 'kind') ?? bad('kind is required');
            if (p['entry'] === undefined) bad('entry is required (one entry as grants.<kind> takes it)');
            const grant = grantChange(() => grants.add(kind, p['entry']));
            svc.events.emit(CONTROL_EVENTS.grants, { kind });
            return { grant };
          },
          'control.grants.remove': (p: Record<string, unknown>) => {
            const kind = optStr(p, 'kind') ?? bad('kind is required');
            const id = optStr(p, 'id') ?? bad('id is required (the grant\'s id or alias)');
            const removed = grants.remove(kind, id);
            if (removed) svc.events.emit(CONTROL_EVENTS.grants, { kind });
            return { removed };
          },
        }
      : {}),
    'control.activity.list': (p) => {
      const limit = p['limit'];
      if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1)) bad('limit must be a positive integer');
      return {
        // A call that was put to the user also carries the sentence its prompt showed (kept in memory only).
        calls: svc.audit
          .list({
            functionId: optStr(p, 'function'),
            state: optStr(p, 'state'),
            since: sinceOf(optStr(p, 'since')),
            until: untilOf(optStr(p, 'until')),
            requester: optStr(p, 'requester'),
            limit: limit as number | undefined,
          })
          .map((c) => {
            const sentence = svc.sentenceOf(c.call_id);
            return sentence ? { ...c, sentence } : c;
          }),
      };
    },
  };
  const out: ControlMethods = {};
  for (const [name, fn] of Object.entries(methods)) {
    out[name] = async (params, ctx) => {
      if (!ctx?.authenticated) throw new WireError('unauthorized', 'The local token is missing or wrong.');
      // No call marks a UI present except control.prompts.attach (a status poll must not draw prompts).
      return fn(obj(params), ctx);
    };
  }
  return out;
}
