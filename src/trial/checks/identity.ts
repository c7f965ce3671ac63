/** Guide line 2: the device is signed in to the right user and workspace. */
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';

export const identityChecks = (): CheckDef[] => [
  {
    id: 'identity',
    title: 'The device is signed in to the expected workspace and user',
    guide: '2',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, id) {
      const d = await ctx.device(id);
      e.push({ label: 'identity as the bridge knows it', response: { workspace_id: d['workspace_id'], user_id: d['user_id'], device_id: d['device_id'] } });
      const wrong: string[] = [];
      if (ctx.o.expectWorkspace !== undefined && d['workspace_id'] !== ctx.o.expectWorkspace) wrong.push(`workspace ${String(d['workspace_id'])}, expected ${ctx.o.expectWorkspace}`);
      if (ctx.o.expectUser !== undefined && d['user_id'] !== ctx.o.expectUser) wrong.push(`user ${String(d['user_id'])}, expected ${ctx.o.expectUser}`);
      if (wrong.length) return { verdict: 'fail', message: 'signed in to the wrong place: ' + wrong.join('; ') };
      // The device's own word, through a call: device.info names the identity the agent holds.
      if ((await ctx.functions(id)).some((f) => f.id === 'device.info')) {
        const r = await ctx.call(e, 'device.info', id, 'device.info', {});
        const out = r.outcome?.output as Record<string, unknown> | undefined;
        const said = (out?.['device'] as Record<string, unknown> | undefined)?.['id'] ?? out?.['device_id'];
        if (said !== undefined && said !== id) return { verdict: 'fail', message: `the bridge routed the call to a device that says it is ${String(said)}, not ${id}` };
      }
      // The token's own scope proves nothing: only what the tester expects is a comparison.
      if (ctx.o.expectWorkspace === undefined && ctx.o.expectUser === undefined) {
        return { verdict: 'inconclusive', message: `signed in to workspace ${String(d['workspace_id'])} as user ${String(d['user_id'])}; nothing to compare with: pass --expect-workspace and --expect-user` };
      }
      const compared = [ctx.o.expectWorkspace !== undefined && `workspace ${String(d['workspace_id'])}`, ctx.o.expectUser !== undefined && `user ${String(d['user_id'])}`].filter(Boolean).join(', ');
      return { verdict: 'pass', message: `as expected: ${compared}` };
    },
  },
];
