import { defineFunction, fail, type HandlerEnv } from '../../src/sdk/index.js';

interface NotifyArgs {
  title: string;
  message: string;
  urgency?: 'low' | 'normal' | 'critical';
}

type Notifier = { notify(o: Record<string, unknown>, cb: (err: Error | null, response?: unknown) => void): void };

let notifier: Notifier | undefined;

/** Loads node-notifier on first use; a missing module means no notifications, not a crashed agent. */
async function loadNotifier(): Promise<Notifier> {
  if (!notifier) {
    try {
      const mod = (await import('node-notifier')) as unknown as { default: Notifier };
      notifier = mod.default;
    } catch {
      fail('device_unavailable', 'Desktop notifications are not available on this device.');
    }
  }
  return notifier;
}

/** `device.notify`: shows a desktop notification to the user (low risk). */
export function notifyFunction(env: HandlerEnv) {
  return defineFunction<NotifyArgs, { shown: boolean }>({
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
      input_schema: {
        type: 'object',
        required: ['title', 'message'],
        properties: {
          title: { type: 'string', minLength: 1, maxLength: 120 },
          message: { type: 'string', minLength: 1, maxLength: 1000 },
          urgency: { enum: ['low', 'normal', 'critical'] },
        },
        additionalProperties: false,
      },
      output_schema: { type: 'object', required: ['shown'], properties: { shown: { type: 'boolean' } }, additionalProperties: false },
      timeout_ms_default: 10000,
      timeout_ms_max: 30000,
      cancellable: true,
      locks: [],
    },
    describe: (a) => `Show a notification titled "${a.title}".`,
    async run(args, ctx) {
      const n = await loadNotifier();
      ctx.commit();
      await new Promise<void>((resolve, reject) => {
        n.notify({ title: args.title, message: args.message, appName: 'AIOS Device', urgency: args.urgency ?? 'normal', wait: false }, (err) => {
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
