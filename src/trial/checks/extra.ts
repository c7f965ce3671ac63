/** The guide's suggested scenarios: duplicate call, cancel while running, reconnect, outdated client, several devices. */
import { randomUUID } from 'node:crypto';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import { waitState } from '../context.js';
import { NO_WAIT } from './faults.js';
import { m } from '../say.js';

export const extraChecks = (): CheckDef[] => [
  {
    id: 'extra.duplicate',
    title: m('trial.t.duplicate'),
    guide: 'extra',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      const functions = await ctx.functions(device);
      const fn = functions.find((f) => f.id === 'diagnostics.echo') ?? functions.find((f) => f.id === 'device.info');
      if (!fn) return { verdict: 'not_run', message: m('trial.m.dup.none') };
      const id = `aios-trial-dup-${randomUUID()}`;
      const args = fn.id === 'diagnostics.echo' ? { value: id } : {};
      const a = await ctx.call(e, m('trial.e.first'), device, fn.id, args, { call_id: id });
      const b = await ctx.call(e, m('trial.e.again'), device, fn.id, args, { call_id: id });
      if (!b.outcome?.replayed) return { verdict: 'fail', message: m('trial.m.dup.not_replayed') };
      if (a.outcome?.started_at !== b.outcome.started_at || JSON.stringify(a.outcome?.output) !== JSON.stringify(b.outcome.output)) return { verdict: 'fail', message: m('trial.m.dup.ran_twice') };
      return { verdict: 'pass', message: m('trial.m.dup.ok') };
    },
  },
  {
    id: 'extra.cancel',
    title: m('trial.t.cancel'),
    guide: 'extra',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      if (!(await ctx.functions(device)).some((f) => f.id === 'diagnostics.wait')) return NO_WAIT;
      const first = await ctx.call(e, m('trial.e.start_wait', { ms: 20_000 }), device, 'diagnostics.wait', { ms: 20_000 }, { wait: false });
      await ctx.ev(e, m('trial.e.until_running'), null, () => waitState(ctx.client, first.call_id, 'running', 30_000));
      const c = await ctx.ev(e, m('trial.e.cancel'), { call_id: first.call_id }, () => ctx.client.cancel(first.call_id, 'aios trial'));
      const fin = c.outcome ? c : await ctx.client.waitTerminal(first.call_id, 30_000);
      if (fin.outcome?.state === 'cancelled') return { verdict: 'pass', message: m('trial.m.cancel.ok', { ms: fin.outcome.duration_ms ?? '?' }) };
      return { verdict: 'fail', message: m('trial.m.cancel.not', { got: fin.outcome?.state ?? fin.state }) };
    },
  },
  {
    id: 'extra.reconnect',
    title: m('trial.t.reconnect'),
    guide: 'extra',
    required: false,
    needs: ONLINE,
    async run(ctx, e, device) {
      const control = ctx.control;
      if (!control) return { verdict: 'not_run', message: ctx.controlProblem };
      if (!(await ctx.functions(device)).some((f) => f.id === 'diagnostics.wait')) return NO_WAIT;
      if (!(await control.has('reconnectSession', { dry_run: true }))) return { verdict: 'not_run', message: m('trial.m.reconnect.no_method') };
      const first = await ctx.call(e, m('trial.e.start_wait', { ms: 1500 }), device, 'diagnostics.wait', { ms: 1500 }, { wait: false });
      await ctx.ev(e, m('trial.e.until_running'), null, () => waitState(ctx.client, first.call_id, 'running', 30_000));
      await ctx.ev(e, m('trial.e.cut'), {}, () => control.api.reconnectSession({}));
      const fin = await ctx.ev(e, m('trial.e.outcome'), null, () => ctx.client.waitTerminal(first.call_id, 60_000));
      if (fin.outcome?.state === 'completed') return { verdict: 'pass', message: m('trial.m.reconnect.ok') };
      return { verdict: 'fail', message: m('trial.m.reconnect.not', { got: fin.outcome?.state ?? fin.state }) };
    },
  },
  {
    id: 'extra.client_outdated',
    title: m('trial.t.outdated'),
    guide: 'extra',
    required: false,
    perDevice: true,
    async run(ctx, _e, device) {
      const d = await ctx.device(device).catch(() => undefined);
      const refused = d?.['last_refused_hello'] as { type?: string } | null | undefined;
      if (refused?.type === 'client_outdated') return { verdict: 'pass', message: m('trial.m.outdated.ok') };
      return { verdict: 'not_run', message: m('trial.m.outdated.not_run') };
    },
  },
  {
    id: 'extra.multi_device',
    title: m('trial.t.multi'),
    guide: 'extra',
    required: (ctx) => ctx.o.devices.length > 1,
    async run(ctx, e) {
      if (ctx.o.devices.length < 2) return { verdict: 'not_run', message: m('trial.m.multi.one') };
      const seen: string[] = [];
      for (const id of ctx.o.devices) {
        const r = await ctx.call(e, m('trial.e.info_on', { id }), id, 'device.info', {});
        const out = r.outcome?.output as Record<string, unknown> | undefined;
        const said = (out?.['device'] as Record<string, unknown> | undefined)?.['id'] ?? out?.['device_id'];
        if (r.outcome?.state !== 'completed') return { verdict: 'fail', message: m('trial.m.multi.ended', { id, ended: `${r.outcome?.state}/${r.outcome?.error?.type}` }) };
        if (said !== undefined && said !== id) return { verdict: 'fail', message: m('trial.m.multi.crossed', { id, said: String(said) }) };
        seen.push(String(said ?? id));
      }
      return { verdict: 'pass', message: m('trial.m.multi.ok', { ids: seen.join(', ') }) };
    },
  },
];
