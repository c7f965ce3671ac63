/**
 * The built-in `diagnostics` adapter: functions with no effect on the machine, for trial runs and tests
 * of the call path. Registered only when enabled in the config.
 */
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

const echo = defineFunction<{ value: unknown }, { value: unknown }>({
  descriptor: {
    ...base,
    id: 'diagnostics.echo',
    name: 'Echo',
    description: 'Returns its argument unchanged. Use to check that calls reach this device.',
    permission_level: 'public',
    input_schema: { type: 'object', required: ['value'], properties: { value: {} }, additionalProperties: false },
    output_schema: { type: 'object', required: ['value'], properties: { value: {} }, additionalProperties: false },
  },
  run: async (a) => ({ value: a.value }),
});

interface WaitArgs {
  ms: number;
  lock?: string;
  steps?: number;
  fail_with?: 'device_unavailable' | 'execution_failed' | 'bad_output' | 'crash';
  ignore_abort?: boolean;
  commit_at_start?: boolean;
}

const wait = defineFunction<WaitArgs, { waited_ms: number }>({
  descriptor: {
    ...base,
    id: 'diagnostics.wait',
    name: 'Wait',
    description: 'Waits the given milliseconds, reporting progress, optionally holding a named lock, then optionally fails in a chosen way. Use to test timeouts, cancellation and locks.',
    permission_level: 'public',
    input_schema: {
      type: 'object',
      required: ['ms'],
      properties: {
        ms: { type: 'integer', minimum: 0, maximum: 600000 },
        lock: { type: 'string', pattern: '^[a-z0-9_-]{1,40}$' },
        steps: { type: 'integer', minimum: 1, maximum: 1000 },
        fail_with: { enum: ['device_unavailable', 'execution_failed', 'bad_output', 'crash'] },
        ignore_abort: { type: 'boolean' },
        commit_at_start: { type: 'boolean' },
      },
      additionalProperties: false,
    },
    output_schema: { type: 'object', required: ['waited_ms'], properties: { waited_ms: { type: 'integer' } }, additionalProperties: false },
  },
  locks: (a) => (a.lock ? [`diagnostics:${a.lock}`] : []),
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
    if (a.fail_with === 'bad_output') return { waited_ms: 'not a number' } as unknown as { waited_ms: number };
    return { waited_ms: Date.now() - started };
  },
});

const confirm = defineFunction<Record<string, never>, { ran: boolean }>({
  descriptor: {
    ...base,
    id: 'diagnostics.confirm',
    name: 'Confirmed no-op',
    description: 'Does nothing, but is marked high risk so that it always goes through confirmation. Use to test prompts.',
    permission_level: 'high',
    confirmation: 'always',
    input_schema: { type: 'object', properties: {}, additionalProperties: false },
    output_schema: { type: 'object', required: ['ran'], properties: { ran: { type: 'boolean' } }, additionalProperties: false },
  },
  describe: () => 'Run a diagnostic no-op that needs your confirmation.',
  run: async () => ({ ran: true }),
});

export default defineHandler({
  name: 'diagnostics',
  create: (env) => (env.options['enabled'] === true ? [echo, wait, confirm] : []),
});
