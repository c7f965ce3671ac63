/** Guide line 2: the device is signed in to the right user and workspace. */
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import { m } from '../say.js';
import type { Message } from '../../i18n/index.js';

export const identityChecks = (): CheckDef[] => [
  {
    id: 'identity',
    title: m('trial.t.identity'),
    guide: '2',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, id) {
      const d = await ctx.device(id);
      e.push({ label: m('trial.e.identity'), response: { workspace_id: d['workspace_id'], user_id: d['user_id'], device_id: d['device_id'] } });
      const wrong: Message[] = [];
      if (ctx.o.expectWorkspace !== undefined && d['workspace_id'] !== ctx.o.expectWorkspace) wrong.push(m('trial.m.identity.wrong_workspace', { got: String(d['workspace_id']), expected: ctx.o.expectWorkspace }));
      if (ctx.o.expectUser !== undefined && d['user_id'] !== ctx.o.expectUser) wrong.push(m('trial.m.identity.wrong_user', { got: String(d['user_id']), expected: ctx.o.expectUser }));
      if (wrong.length) return { verdict: 'fail', message: m('trial.m.identity.wrong', { what: wrong.length === 2 ? m('trial.m.and', { a: wrong[0]!, b: wrong[1]! }) : wrong[0]! }) };
      // The device's own word, through a call: device.info names the identity the agent holds.
      if ((await ctx.functions(id)).some((f) => f.id === 'device.info')) {
        const r = await ctx.call(e, m('trial.e.fn', { fn: 'device.info' }), id, 'device.info', {});
        const out = r.outcome?.output as Record<string, unknown> | undefined;
        const said = (out?.['device'] as Record<string, unknown> | undefined)?.['id'] ?? out?.['device_id'];
        if (said !== undefined && said !== id) return { verdict: 'fail', message: m('trial.m.identity.misrouted', { said: String(said), id }) };
      }
      // The token's own scope proves nothing: only what the tester expects is a comparison.
      if (ctx.o.expectWorkspace === undefined && ctx.o.expectUser === undefined) {
        return { verdict: 'inconclusive', message: m('trial.m.identity.nothing_to_compare', { workspace: String(d['workspace_id']), user: String(d['user_id']) }) };
      }
      const ws = ctx.o.expectWorkspace !== undefined ? m('trial.m.identity.workspace', { id: String(d['workspace_id']) }) : undefined;
      const user = ctx.o.expectUser !== undefined ? m('trial.m.identity.user', { id: String(d['user_id']) }) : undefined;
      return { verdict: 'pass', message: m('trial.m.identity.ok', { what: ws && user ? m('trial.m.and', { a: ws, b: user }) : (ws ?? user)! }) };
    },
  },
];
