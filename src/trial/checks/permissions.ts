/** Guide line 4: what the device's functions need is granted, and what is not granted is refused. */
import { randomUUID } from 'node:crypto';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import { filesGrants } from '../scratch.js';

export const permissionsChecks = (): CheckDef[] => [
  {
    id: 'permissions.granted',
    title: 'The device has shared what its functions need (a folder for the files functions)',
    guide: '4',
    required: (ctx) => !!ctx.control,
    needs: ONLINE,
    async run(ctx, e, device) {
      const hasFiles = (await ctx.functions(device)).some((f) => f.id.startsWith('files.'));
      if (!hasFiles) return { verdict: 'not_run', message: 'the device publishes no files functions' };
      // What the user shared is not visible through the runtime API (by design); the device's own controls say.
      const control = ctx.control;
      if (!control) return { verdict: 'not_run', message: `what the user shared is visible only on the device: ${ctx.controlProblem}` };
      const g = await ctx.ev(e, 'control.grants.list', {}, () => control.call('control.grants.list')).catch(() => undefined);
      if (!g) return { verdict: 'not_run', message: 'the agent offers no control.grants.list' };
      const files = filesGrants(g).filter((x) => x['alias'] !== ctx.scratch?.root && x['id'] !== ctx.scratch?.dir);
      if (!files.length) return { verdict: 'fail', message: 'no folder is shared on the device, so the files functions can do nothing (share one in the tray\'s settings or under grants.files)' };
      return { verdict: 'pass', message: `${files.length} shared folder(s)` };
    },
  },
  {
    id: 'permissions.denied',
    title: 'A call on an ungranted resource ends permission_denied, before any prompt',
    guide: '4',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      if (!(await ctx.functions(device)).some((f) => f.id === 'files.read_text')) return { verdict: 'not_run', message: 'no function with a resource the trial knows how to probe (files.read_text)' };
      const r = await ctx.call(e, 'files.read_text outside every share', device, 'files.read_text', { root: `aios-trial-not-shared-${randomUUID().slice(0, 8)}`, path: 'x.txt' });
      const err = r.outcome?.error;
      if (err?.type !== 'permission_denied') return { verdict: 'fail', message: `expected permission_denied, got ${r.outcome?.state}/${err?.type ?? 'no error'}` };
      if (r.timeline.some((t) => t.state === 'awaiting_confirmation')) return { verdict: 'fail', message: 'permission_denied, but only after asking the user' };
      return { verdict: 'pass', message: `permission_denied: ${err.message}` };
    },
  },
];
