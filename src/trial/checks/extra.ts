/** The guide's suggested scenarios: duplicate call, cancel while running, reconnect, outdated client, several devices. */
import { randomUUID } from 'node:crypto';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import { waitState } from '../context.js';
import { NO_WAIT } from './faults.js';

export const extraChecks = (): CheckDef[] => [
  {
    id: 'extra.duplicate',
    title: 'A duplicate call_id is replayed with the first outcome and runs once',
    guide: 'extra',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      const functions = await ctx.functions(device);
      const fn = functions.find((f) => f.id === 'diagnostics.echo') ?? functions.find((f) => f.id === 'device.info');
      if (!fn) return { verdict: 'not_run', message: 'no idempotent function to repeat (device.info or diagnostics.echo)' };
      const id = `aios-trial-dup-${randomUUID()}`;
      const args = fn.id === 'diagnostics.echo' ? { value: id } : {};
      const a = await ctx.call(e, 'first', device, fn.id, args, { call_id: id });
      const b = await ctx.call(e, 'same call_id again', device, fn.id, args, { call_id: id });
      if (!b.outcome?.replayed) return { verdict: 'fail', message: 'the second call was not marked replayed' };
      if (a.outcome?.started_at !== b.outcome.started_at || JSON.stringify(a.outcome?.output) !== JSON.stringify(b.outcome.output)) return { verdict: 'fail', message: 'the replay differs from the first outcome: the function ran twice' };
      return { verdict: 'pass', message: 'replayed: true, same outcome, same start time (ran once)' };
    },
  },
  {
    id: 'extra.cancel',
    title: 'A call cancelled while running ends cancelled',
    guide: 'extra',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      if (!(await ctx.functions(device)).some((f) => f.id === 'diagnostics.wait')) return NO_WAIT;
      const first = await ctx.call(e, 'start diagnostics.wait 20000 ms', device, 'diagnostics.wait', { ms: 20_000 }, { wait: false });
      await ctx.ev(e, 'wait until running', null, () => waitState(ctx.client, first.call_id, 'running', 30_000));
      const c = await ctx.ev(e, 'POST cancel', { call_id: first.call_id }, () => ctx.client.cancel(first.call_id, 'aios trial'));
      const fin = c.outcome ? c : await ctx.client.waitTerminal(first.call_id, 30_000);
      if (fin.outcome?.state === 'cancelled') return { verdict: 'pass', message: `cancelled after ${fin.outcome.duration_ms ?? '?'} ms` };
      return { verdict: 'fail', message: `expected cancelled, got ${fin.outcome?.state ?? fin.state}` };
    },
  },
  {
    id: 'extra.reconnect',
    title: 'A link cut mid-call: the outcome is delivered after reconnect',
    guide: 'extra',
    required: false,
    needs: ONLINE,
    async run(ctx, e, device) {
      const control = ctx.control;
      if (!control) return { verdict: 'not_run', message: ctx.controlProblem };
      if (!(await ctx.functions(device)).some((f) => f.id === 'diagnostics.wait')) return NO_WAIT;
      if (!(await control.has('control.session.reconnect', { dry_run: true }))) return { verdict: 'not_run', message: 'the agent offers no control.session.reconnect to cut its link' };
      const first = await ctx.call(e, 'start diagnostics.wait 1500 ms', device, 'diagnostics.wait', { ms: 1500 }, { wait: false });
      await ctx.ev(e, 'wait until running', null, () => waitState(ctx.client, first.call_id, 'running', 30_000));
      await ctx.ev(e, 'cut the link (control.session.reconnect)', {}, () => control.call('control.session.reconnect'));
      const fin = await ctx.ev(e, 'wait for the outcome', null, () => ctx.client.waitTerminal(first.call_id, 60_000));
      if (fin.outcome?.state === 'completed') return { verdict: 'pass', message: 'completed; the outcome arrived after the link came back' };
      return { verdict: 'fail', message: `expected completed after reconnect, got ${fin.outcome?.state ?? fin.state}` };
    },
  },
  {
    id: 'extra.client_outdated',
    title: 'An outdated client is told client_outdated, not left offline',
    guide: 'extra',
    required: false,
    perDevice: true,
    async run(ctx, _e, device) {
      const d = await ctx.device(device).catch(() => undefined);
      const refused = d?.['last_refused_hello'] as { type?: string } | null | undefined;
      if (refused?.type === 'client_outdated') return { verdict: 'pass', message: 'the bridge refused the device\'s hello with client_outdated and says so in the device record' };
      return { verdict: 'not_run', message: 'needs a bridge restarted with a higher min_client_version (not in the trial\'s control); client.version reports an outdated device when the bridge has refused one' };
    },
  },
  {
    id: 'extra.multi_device',
    title: 'Several devices of one user are addressed separately, with no cross-talk',
    guide: 'extra',
    required: (ctx) => ctx.o.devices.length > 1,
    async run(ctx, e) {
      if (ctx.o.devices.length < 2) return { verdict: 'not_run', message: 'one --device given; give --device twice to check two devices of one user' };
      const seen: string[] = [];
      for (const id of ctx.o.devices) {
        const r = await ctx.call(e, `device.info on ${id}`, id, 'device.info', {});
        const out = r.outcome?.output as Record<string, unknown> | undefined;
        const said = (out?.['device'] as Record<string, unknown> | undefined)?.['id'] ?? out?.['device_id'];
        if (r.outcome?.state !== 'completed') return { verdict: 'fail', message: `device.info on ${id} ended ${r.outcome?.state}/${r.outcome?.error?.type}` };
        if (said !== undefined && said !== id) return { verdict: 'fail', message: `a call addressed to ${id} was answered by ${String(said)}` };
        seen.push(String(said ?? id));
      }
      return { verdict: 'pass', message: `each device answered for itself: ${seen.join(', ')}` };
    },
  },
];
