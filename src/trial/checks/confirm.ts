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
import type { Evidence } from '../types.js';
import { ensureScratch } from './contract.js';

/** How long the "nobody answers" step waits for the prompt to run out. */
const SHORT_CONFIRM_MS = 1500;

type Step = 'allow' | 'deny' | 'timeout';

export const confirmChecks = (): CheckDef[] => [
  {
    id: 'confirm.high_risk',
    title: 'A high-risk call waits for the user: allowed it runs, denied or unanswered it has no effect',
    guide: '6',
    required: true,
    needs: ONLINE,
    run: (ctx, e, device) => confirmBothWays(ctx, e, device),
  },
];

async function confirmBothWays(ctx: TrialContext, e: Evidence[], device: string): Promise<Observed> {
  const functions = await ctx.functions(device);
  // Prefer an effect the trial can see on disk: files.write_text in the scratch share (--allow-effects).
  const scratch = ctx.o.allowEffects && functions.some((f) => f.id === 'files.write_text') ? await ensureScratch(ctx) : undefined;
  const fn = scratch ? functions.find((f) => f.id === 'files.write_text') : functions.find((f) => f.id === 'diagnostics.confirm');
  if (!fn) return { verdict: 'not_run', message: 'no high-risk function the trial may call: enable diagnostics (diagnostics.confirm), or run with --allow-effects --control local (files.write_text in a scratch share)' };
  const dir = scratch ? mkdtempSync(join(scratch.dir, 'confirm-')) : undefined;
  const target = (step: Step) => (dir ? join(dir, `${step}.txt`) : undefined);
  const argsFor = (step: Step) => (scratch && dir ? { root: scratch.root, path: relative(scratch.dir, target(step)!).split('\\').join('/'), text: 'aios trial' } : {});
  const effect = (step: Step, r: CallRecord): boolean => (dir ? existsSync(target(step)!) : (r.outcome?.output as { ran?: unknown } | undefined)?.ran === true);
  const control = ctx.control;
  const answering = !!ctx.answeringBy && !!control;
  const say = (text: string) => {
    if (!answering) process.stderr.write(`trial: ${text}\n`);
  };
  const run = async (step: Step): Promise<CallRecord> => {
    if (answering) control.setAnswer(step === 'allow' ? 'allow_once' : step === 'deny' ? 'deny' : 'none');
    const budget = step === 'timeout' ? SHORT_CONFIRM_MS : answering ? 30_000 : 120_000;
    return ctx.call(e, `${fn.id} (${fn.permission_level}): ${step}`, device, fn.id, argsFor(step), { confirm_timeout_ms: budget });
  };
  const how = (r: CallRecord) => `${r.outcome?.state ?? r.state}/${r.outcome?.error?.type ?? '-'}, confirmation ${JSON.stringify(r.outcome?.confirmation ?? null)}`;
  const prompted = (r: CallRecord) => r.timeline.some((t) => t.state === 'awaiting_confirmation') || r.outcome?.confirmation?.required === true;

  try {
    // 1. Allowed: the prompt comes, the user decides, the effect happens.
    say(`a prompt for ${fn.id} appears on the device now: ALLOW it`);
    const allowed = await run('allow');
    const c1 = allowed.outcome?.confirmation;
    if (!prompted(allowed) || (c1 && c1.decided_by !== 'user')) {
      const by = !c1?.decided_by || c1.decided_by === 'user' ? '' : c1.decided_by === 'system' ? ` (decided by system, ${c1.decision}: the device could not show a prompt)` : ` (decided by ${c1.decided_by}: a policy or a remembered decision pre-allows a high-risk function)`;
      return { verdict: 'fail', message: `no prompt appeared for a high-risk call${by}: it ended ${how(allowed)}` };
    }
    if (allowed.outcome?.state !== 'completed' || c1?.decision !== 'allowed') return { verdict: 'fail', message: `the prompt was allowed, but the call ended ${how(allowed)}${answering ? '' : ' (was it allowed?)'}` };
    if (!effect('allow', allowed)) return { verdict: 'fail', message: `the call was allowed and completed, but its effect is not there (${dir ? target('allow') : 'output.ran'})` };

    // 2. Denied: no effect.
    say(`a second prompt for ${fn.id} appears now: DENY it`);
    const denied = await run('deny');
    if (effect('deny', denied) || denied.outcome?.state === 'completed') return { verdict: 'fail', message: `the prompt was denied, but the call ran anyway: it ended ${how(denied)}${dir ? `; ${target('deny')} exists` : ''}` };
    if (denied.outcome?.confirmation?.decision !== 'denied') return { verdict: 'fail', message: `expected a denied call, got ${how(denied)}${answering ? '' : ' (was it denied?)'}` };

    // 3. Unanswered: the prompt runs out after the call's short confirm_timeout_ms, no effect.
    say(`a third prompt for ${fn.id} appears now: do NOT answer it (it runs out in ${SHORT_CONFIRM_MS / 1000} s)`);
    const unanswered = await run('timeout');
    if (effect('timeout', unanswered) || unanswered.outcome?.state === 'completed') return { verdict: 'fail', message: `nobody answered, but the call ran anyway: it ended ${how(unanswered)}` };
    if (unanswered.outcome?.error?.type !== 'confirmation_timeout') return { verdict: 'fail', message: `an unanswered prompt with confirm_timeout_ms ${SHORT_CONFIRM_MS} should end confirmation_timeout, got ${how(unanswered)}` };

    const what = `allowed: ran${dir ? ' (file written)' : ''}; denied: no effect; unanswered: confirmation_timeout after ${SHORT_CONFIRM_MS} ms`;
    // Answers the trial gave itself show the prompt works, not that a person confirms: simulated, never pass.
    if (answering) return { verdict: 'simulated', message: `${what}: answered by the trial, not a person (attached through ${ctx.answeringBy === 'attach' ? 'control.prompts.attach' : 'the control connection'}: --unattended)` };
    return { verdict: 'pass', message: `${what}; answered by the tester on the device` };
  } finally {
    if (answering) control.setAnswer('allow_once');
  }
}
