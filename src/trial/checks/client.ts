/** Guide line 1: the device is online and its client and protocol versions are supported. */
import { PROTOCOL_VERSION } from '../../protocol/messages.js';
import { isClientOutdated } from '../../bridge/versions.js';
import type { CheckDef } from '../check.js';
import { m } from '../say.js';

export const clientChecks = (): CheckDef[] => [
  {
    id: 'client.version',
    title: m('trial.t.client_version'),
    guide: '1',
    required: true,
    perDevice: true,
    async run(ctx, e, id) {
      const device = await ctx.ev(e, m('trial.e.get', { path: '/v1/devices/' + id }), null, () => ctx.device(id));
      const minClient = (device['min_client_version'] as string | null | undefined) ?? null;
      const refused = device['last_refused_hello'] as { type?: string; message?: string; client_version?: string } | null | undefined;
      if (!device['online']) {
        if (refused?.type === 'client_outdated') return { verdict: 'fail', message: m('trial.m.client.outdated_refused', { version: String(refused.client_version || device['client_version'] || '?'), min: String(minClient) }) };
        if (refused?.type) return { verdict: 'fail', message: m('trial.m.client.hello_refused', { type: refused.type, message: refused.message ?? '' }) };
        return { verdict: 'fail', message: m('trial.m.client.offline') };
      }
      const v = String(device['client_version'] ?? '');
      if (minClient && isClientOutdated(v, minClient)) return { verdict: 'fail', message: m('trial.m.client.below_min', { version: v, min: minClient }) };
      const pv = device['protocol_version'];
      if (pv !== undefined && pv !== null && String(pv).split('.')[0] !== PROTOCOL_VERSION.split('.')[0]) return { verdict: 'fail', message: m('trial.m.client.protocol', { theirs: String(pv), ours: PROTOCOL_VERSION }) };
      const parts = [minClient ? m('trial.m.client.min_part', { min: minClient }) : '', pv ? m('trial.m.client.protocol_part', { version: String(pv) }) : ''];
      return { verdict: 'pass', message: m('trial.m.client.ok', { version: v, min: parts[0]!, protocol: parts[1]! }) };
    },
  },
];
