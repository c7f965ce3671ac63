/** Guide line 6: high-risk local operations are confirmed by the user before they run. */
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import { ensureScratch } from './contract.js';

export const confirmChecks = (): CheckDef[] => [
  {
    id: 'confirm.high_risk',
    title: 'A high-risk call waits for the user\'s confirmation before it runs',
    guide: '6',
    required: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      const functions = await ctx.functions(device);
      const scratch = ctx.o.allowEffects && functions.some((f) => f.id === 'files.write_text') ? await ensureScratch(ctx) : undefined;
      const fn = functions.find((f) => f.id === 'diagnostics.confirm') ?? (scratch ? functions.find((f) => f.id === 'files.write_text') : undefined);
      if (!fn) return { verdict: 'not_run', message: 'no high-risk function the trial may call: enable diagnostics (diagnostics.confirm), or run with --allow-effects --control local (files.write_text in a scratch share)' };
      if (!ctx.answeringBy) process.stderr.write(`trial: answer the prompt for ${fn.id} on the device now (allow it)\n`);
      const args = fn.id === 'files.write_text' ? { root: scratch!.root, path: 'trial-confirm.txt', text: 'aios trial' } : {};
      const r = await ctx.call(e, `${fn.id} (${fn.permission_level})`, device, fn.id, args, { confirm_timeout_ms: ctx.answeringBy ? 30_000 : 120_000 });
      const out = r.outcome;
      const asked = r.timeline.some((t) => t.state === 'awaiting_confirmation') || out?.confirmation?.required === true;
      if (!asked || out?.confirmation?.decided_by !== 'user') {
        return { verdict: 'fail', message: `the prompt never came: the call ended ${out?.state}/${out?.error?.type ?? '-'} with confirmation ${JSON.stringify(out?.confirmation ?? null)} (a high-risk call must be confirmed by the user)` };
      }
      if (out.state !== 'completed') return { verdict: 'fail', message: `the user was asked, but the call ended ${out.state}/${out.error?.type ?? '-'}${ctx.answeringBy ? '' : ' (was the prompt allowed?)'}` };
      // An answer the trial gave itself shows the prompt works, not that a person confirms: simulated, never pass.
      if (ctx.answeringBy) return { verdict: 'simulated', message: `the prompt came and was ${out.confirmation.decision}: answered by the trial, not a person (attached through ${ctx.answeringBy === 'attach' ? 'control.prompts.attach' : 'the control connection'}: --unattended)` };
      return { verdict: 'pass', message: `asked and ${out.confirmation.decision} by the user` };
    },
  },
];
