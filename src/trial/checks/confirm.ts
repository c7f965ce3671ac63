/**
 * Guide line 6: high-risk local operations are confirmed by the user before they run. Observed both ways:
 * an allowed call has its effect, a denied one has none, and an unanswered one runs out; a high-risk call
 * that is not asked at all (a policy or a remembered decision pre-allows it) fails.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { CallRecord } from '../../bridge/store.js';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import type { Observed, TrialContext } from '../context.js';
import type { Trace } from '../types.js';
import { m, render } from '../say.js';
import { CONTROL_API } from '../../control/api.js';
import type { Message } from '../../i18n/index.js';
import { ensureScratch } from './contract.js';

/** How long the "nobody answers" step waits for the prompt to run out. */
const SHORT_CONFIRM_MS = 1500;

type Step = 'allow' | 'deny' | 'timeout';

export const confirmChecks = (): CheckDef[] => [
  {
    id: 'confirm.high_risk',
    title: m('trial.t.confirm'),
    guide: '6',
    required: true,
    needs: ONLINE,
    run: (ctx, e, device) => confirmBothWays(ctx, e, device),
  },
];

async function confirmBothWays(ctx: TrialContext, e: Trace[], device: string): Promise<Observed> {
  const functions = await ctx.functions(device);
  // Prefer an effect the trial can see on disk: files.write_text in the scratch share (--allow-effects).
  const scratch = ctx.o.allowEffects && functions.some((f) => f.id === 'files.write_text') ? await ensureScratch(ctx) : undefined;
  const fn = scratch ? functions.find((f) => f.id === 'files.write_text') : functions.find((f) => f.id === 'diagnostics.confirm');
  if (!fn) return { verdict: 'not_run', message: m('trial.m.confirm.no_function') };
  const dir = scratch ? mkdtempSync(join(scratch.dir, 'confirm-')) : undefined;
  const target = (step: Step) => (dir ? join(dir, `${step}.txt`) : undefined);
  const argsFor = (step: Step) => (scratch && dir ? { root: scratch.root, path: relative(scratch.dir, target(step)!).split('\\').join('/'), text: 'aios trial' } : {});
  const effect = (step: Step, r: CallRecord): boolean => (dir ? existsSync(target(step)!) : (r.outcome?.output as { ran?: unknown } | undefined)?.ran === true);
  const control = ctx.control;
  const answering = !!ctx.answeringBy && !!control;
  const lang = ctx.o.lang ?? 'en';
  const say = (msg: Message) => {
    if (!answering) process.stderr.write(`${render(m('trial.m.confirm.tell', { text: msg }), lang)}\n`);
  };
  const run = async (step: Step): Promise<CallRecord> => {
    if (answering) control.setAnswer(step === 'allow' ? 'allow_once' : step === 'deny' ? 'deny' : 'none');
    const budget = step === 'timeout' ? SHORT_CONFIRM_MS : answering ? 30_000 : 120_000;
    return ctx.call(e, m('trial.e.confirm_step', { fn: fn.id, level: fn.permission_level, step }), device, fn.id, argsFor(step), { confirm_timeout_ms: budget });
  };
  const how = (r: CallRecord) => `${r.outcome?.state ?? r.state}/${r.outcome?.error?.type ?? '-'}, confirmation ${JSON.stringify(r.outcome?.confirmation ?? null)}`;
  const prompted = (r: CallRecord) => r.timeline.some((t) => t.state === 'awaiting_confirmation') || r.outcome?.confirmation?.required === true;
  const ask = answering ? '' : m('trial.m.confirm.was_it');

  try {
    // 1. Allowed: the prompt comes, the user decides, the effect happens.
    say(m('trial.m.confirm.tell_allow', { fn: fn.id }));
    const allowed = await run('allow');
    const c1 = allowed.outcome?.confirmation;
    if (!prompted(allowed) || (c1 && c1.decided_by !== 'user')) {
      const by = !c1?.decided_by || c1.decided_by === 'user' ? '' : c1.decided_by === 'system' ? m('trial.m.confirm.by_system', { decision: c1.decision }) : m('trial.m.confirm.by_other', { by: c1.decided_by });
      return { verdict: 'fail', message: m('trial.m.confirm.no_prompt', { by, how: how(allowed) }) };
    }
    if (allowed.outcome?.state !== 'completed' || c1?.decision !== 'allowed') return { verdict: 'fail', message: m('trial.m.confirm.allowed_not_run', { how: how(allowed), ask: answering ? '' : m('trial.m.confirm.was_it_allowed') }) };
    if (!effect('allow', allowed)) return { verdict: 'fail', message: m('trial.m.confirm.no_effect', { where: dir ? target('allow')! : 'output.ran' }) };

    // 2. Denied: no effect.
    say(m('trial.m.confirm.tell_deny', { fn: fn.id }));
    const denied = await run('deny');
    if (effect('deny', denied) || denied.outcome?.state === 'completed') return { verdict: 'fail', message: m('trial.m.confirm.denied_ran', { how: how(denied), file: dir ? m('trial.m.confirm.file_exists', { file: target('deny')! }) : '' }) };
    if (denied.outcome?.confirmation?.decision !== 'denied') return { verdict: 'fail', message: m('trial.m.confirm.not_denied', { how: how(denied), ask }) };

    // 3. Unanswered: the prompt runs out after the call's short confirm_timeout_ms, no effect.
    say(m('trial.m.confirm.tell_none', { fn: fn.id, seconds: SHORT_CONFIRM_MS / 1000 }));
    const unanswered = await run('timeout');
    if (effect('timeout', unanswered) || unanswered.outcome?.state === 'completed') return { verdict: 'fail', message: m('trial.m.confirm.unanswered_ran', { how: how(unanswered) }) };
    if (unanswered.outcome?.error?.type !== 'confirmation_timeout') return { verdict: 'fail', message: m('trial.m.confirm.not_timeout', { ms: SHORT_CONFIRM_MS, how: how(unanswered) }) };

    const what = m(dir ? 'trial.m.confirm.what_file' : 'trial.m.confirm.what', { ms: SHORT_CONFIRM_MS });
    // Answers the trial gave itself show the prompt works, not that a person confirms: simulated, never pass.
    if (answering) return { verdict: 'simulated', message: m('trial.m.confirm.simulated', { what, via: ctx.answeringBy === 'attach' ? CONTROL_API.attachAnswerer.method : m('trial.m.confirm.via_connection') }) };
    return { verdict: 'pass', message: m('trial.m.confirm.ok', { what }) };
  } finally {
    if (answering) control.setAnswer('allow_once');
  }
}
