import { Type } from '@sinclair/typebox';
import { defineFunction, fail, optionalNative, type HandlerEnv } from '../../src/sdk/index.js';

/** node-notifier, loaded on first use: a missing module means no notifications, not a crashed agent. */
async function loadNotifier() {
  const mod = await optionalNative('node-notifier', { feature: 'Desktop notifications', load: () => import('node-notifier') });
  return mod.default;
}

/** `device.notify`: shows a desktop notification to the user (low risk). */
export function notifyFunction(env: HandlerEnv) {
  return defineFunction({
    descriptor: {
      id: 'device.notify',
      name: 'Show a notification',
      description: 'Shows a desktop notification with a title and a short message to the person at this device. Use to tell them something; it does not wait for an answer.',
      version: '1.0.0',
      capability_type: 'device',
      access: 'restricted',
      permission_level: 'low',
      risk: { read_only: false, destructive: false, idempotent: false, physical: false },
      confirmation: 'policy',
      examples: ['Tell the front desk that the courier has arrived'],
      input_schema: Type.Object({
        title: Type.String({ minLength: 1, maxLength: 120 }),
        message: Type.String({ minLength: 1, maxLength: 1000 }),
        urgency: Type.Optional(Type.Union([Type.Literal('low'), Type.Literal('normal'), Type.Literal('critical')])),
      }, { additionalProperties: false }),
      output_schema: Type.Object({ shown: Type.Boolean() }, { additionalProperties: false }),
      timeout_ms_default: 10000,
      timeout_ms_max: 30000,
      cancellable: true,
      locks: [],
    },
    describe: (a) => ({ key: 'device.notify', params: { title: a.title } }),
    async run(args, ctx) {
      const n = await loadNotifier();
      ctx.commit();
      await new Promise<void>((resolve, reject) => {
        // appName and urgency are read by some back-ends (notify-send) and ignored by the others.
        const note = { title: args.title, message: args.message, appName: 'AIOS Device', urgency: args.urgency ?? 'normal', wait: false };
        n.notify(note, (err) => {
          if (err) reject(err);
          else resolve();
        });
      }).catch(() => {
        env.log.warn({}, 'notification backend failed');
        fail('device_unavailable', 'No notification service answered on this device.', { sideEffects: 'none' });
      });
      return { shown: true };
    },
  });
}
