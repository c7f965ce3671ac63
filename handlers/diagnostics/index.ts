/**
 * The built-in `diagnostics` adapter: functions with no effect on the machine, for trial runs and tests
 * of the call path. Registered only when enabled in the config.
 */
import { Type } from '@sinclair/typebox';
import { defineFunction, defineHandler, fail, type DescriptorInput } from '../../src/sdk/index.js';

const base = {
  version: '1.0.0',
  capability_type: 'diagnostics',
  access: 'private',
  risk: { read_only: true, destructive: false, idempotent: true, physical: false },
  confirmation: 'never',
  timeout_ms_default: 30_000,
  timeout_ms_max: 600_000,
  cancellable: true,
  locks: [],
} satisfies Partial<DescriptorInput>;

const echo = defineFunction({
  descriptor: {
    ...base,
    id: 'diagnostics.echo',
    name: 'Echo',
    description: 'Returns its argument unchanged. Use to check that calls reach this device.',
    permission_level: 'public',
    input_schema: Type.Object({ value: Type.Unknown() }, { additionalProperties: false }),
    output_schema: Type.Object({ value: Type.Unknown() }, { additionalProperties: false }),
  },
  run: async (a) => ({ value: a.value }),
});

const wait = defineFunction({
  descriptor: {
    ...base,
    id: 'diagnostics.wait',
    name: 'Wait',
    description: 'Waits the given milliseconds, reporting progress, optionally holding a named lock, then optionally fails in a chosen way. Use to test timeouts, cancellation and locks.',
    permission_level: 'public',
    input_schema: Type.Object({
      ms: Type.Integer({ minimum: 0, maximum: 600000 }),
      lock: Type.Optional(Type.String({ pattern: '^[a-z0-9_-]{1,40}$' })),
      steps: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
      fail_with: Type.Optional(Type.Union([Type.Literal('device_unavailable'), Type.Literal('execution_failed'), Type.Literal('bad_output'), Type.Literal('crash')])),
      ignore_abort: Type.Optional(Type.Boolean()),
      commit_at_start: Type.Optional(Type.Boolean()),
    }, { additionalProperties: false }),
    output_schema: Type.Object({ waited_ms: Type.Integer() }, { additionalProperties: false }),
  },
  // A named lock serialises waits (lock key `diagnostics:<name>`); not a grant kind, so nothing is checked.
  resources: (a) => (a.lock ? [{ kind: 'diagnostics', id: a.lock }] : []),
  async run(a, ctx) {
    const started = Date.now();
    if (a.commit_at_start) ctx.commit();
    const steps = a.steps ?? 10;
    for (let i = 1; i <= steps; i++) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          clearTimeout(t);
          reject(ctx.signal.reason);
        };
        const t = setTimeout(() => {
          ctx.signal.removeEventListener('abort', onAbort);
          resolve();
        }, a.ms / steps);
        if (!a.ignore_abort) ctx.signal.addEventListener('abort', onAbort, { once: true });
      });
      ctx.progress({ progress: i, total: steps });
    }
    if (a.fail_with === 'device_unavailable') fail('device_unavailable', 'The diagnostic device is unplugged (simulated).');
    if (a.fail_with === 'execution_failed') fail('execution_failed', 'The diagnostic handler failed (simulated).', { details: { reason: 'simulated' } });
    if (a.fail_with === 'crash') throw new TypeError('simulated crash with private detail /home/secret');
    // JSON.parse gives `any`: the one way to hand the host an output its schema refuses, on purpose.
    if (a.fail_with === 'bad_output') return JSON.parse('{"waited_ms":"not a number"}');
    return { waited_ms: Date.now() - started };
  },
});

const confirm = defineFunction({
  descriptor: {
    ...base,
    id: 'diagnostics.confirm',
    name: 'Confirmed no-op',
    description: 'Does nothing, but is marked high risk so that it always goes through confirmation. Use to test prompts.',
    permission_level: 'high',
    confirmation: 'always',
    input_schema: Type.Object({}, { additionalProperties: false }),
    output_schema: Type.Object({ ran: Type.Boolean() }, { additionalProperties: false }),
  },
  describe: () => ({ key: 'diagnostics.confirm' }),
  run: async () => ({ ran: true }),
});

export default defineHandler({
  name: 'diagnostics',
  title: 'Call-path diagnostics',
  description: 'Echo and wait functions that let QA check validation, deduplication, timeouts, cancellation, locks and progress end to end.',
  about: 'Built-in adapter for QA trial runs: exercises the call path without touching the machine.\nOff unless the config says `handlers: { diagnostics: { enabled: true } }`.',
  optIn: true,
  create: () => [echo, wait, confirm],
});
