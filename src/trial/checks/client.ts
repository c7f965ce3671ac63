/** Guide line 1: the device is online and its client and protocol versions are supported. */
import { PROTOCOL_VERSION } from '../../protocol/messages.js';
import { isClientOutdated } from '../../bridge/versions.js';
import type { CheckDef } from '../check.js';

export const clientChecks = (): CheckDef[] => [
  {
    id: 'client.version',
    title: 'The device is online and its client and protocol versions are supported',
    guide: '1',
    required: true,
    perDevice: true,
    async run(ctx, e, id) {
      const device = await ctx.ev(e, 'GET /v1/devices/' + id, null, () => ctx.device(id));
      const minClient = (device['min_client_version'] as string | null | undefined) ?? null;
      const refused = device['last_refused_hello'] as { type?: string; message?: string; client_version?: string } | null | undefined;
      if (!device['online']) {
        if (refused?.type === 'client_outdated') return { verdict: 'fail', message: `client_outdated: the device's client ${String(refused.client_version || device['client_version'] || '?')} is below the bridge's minimum ${String(minClient)}; update AIOS Device on the device` };
        if (refused?.type) return { verdict: 'fail', message: `the bridge refused the device's last hello: ${refused.type}: ${refused.message ?? ''}` };
        return { verdict: 'fail', message: 'the device is offline: start the agent (or the tray) on it and sign it in' };
      }
      const v = String(device['client_version'] ?? '');
      if (minClient && isClientOutdated(v, minClient)) return { verdict: 'fail', message: `client ${v} is below the bridge's minimum ${minClient}` };
      const pv = device['protocol_version'];
      if (pv !== undefined && pv !== null && String(pv).split('.')[0] !== PROTOCOL_VERSION.split('.')[0]) return { verdict: 'fail', message: `the session speaks protocol ${String(pv)}, this trial speaks ${PROTOCOL_VERSION}` };
      return { verdict: 'pass', message: `online; client ${v}${minClient ? ` (bridge minimum ${minClient})` : ''}${pv ? `, protocol ${String(pv)}` : ''}` };
    },
  },
];
