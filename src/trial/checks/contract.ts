/** Guide line 3: function ids, input and output parameters match the platform (one check per published function). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Descriptor } from '../../protocol/messages.js';
import { schemaValidator } from '../../protocol/schema-validator.js';
import { sampleValid, mutations } from '../samples.js';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import type { TrialContext } from '../context.js';
import { shareScratch, type Scratch } from '../scratch.js';

const HIGH = new Set(['high', 'critical']);

/** One row per function any device publishes; on each device it publishes it. */
export async function contractChecks(ctx: TrialContext): Promise<CheckDef[]> {
  const ids = new Set<string>();
  for (const d of ctx.o.devices) for (const f of await ctx.functions(d)) ids.add(f.id);
  return [...ids].sort().map((fn) => ({
    id: `contract.${fn}`,
    title: `${fn}: valid arguments are accepted and the output matches its schema; invalid ones are refused at the right pointer`,
    guide: '3',
    required: true,
    perDevice: true,
    needs: ONLINE,
    appliesTo: async (c: TrialContext, device: string) => (await c.functions(device)).some((f) => f.id === fn),
    async run(c, e, device) {
      const f = (await c.functions(device)).find((x) => x.id === fn)!;
      const problems: string[] = [];
      const effects = !(f.risk?.read_only ?? false);
      const scratch = effects && c.o.allowEffects && fn.startsWith('files.') ? await ensureScratch(c) : undefined;
      // Invalid arguments never reach a handler, so they are safe to send to any function.
      const sample = sampleValid(f.input_schema as Record<string, unknown>);
      const valid = sample.ok ? scratchArgs(f, sample.value as Record<string, unknown>, scratch) : undefined;
      if (valid) {
        for (const m of mutations(f.input_schema as Record<string, unknown>, valid)) {
          const r = await c.call(e, `invalid: ${m.what}`, device, fn, m.args);
          const err = r.outcome?.error;
          if (err?.type !== 'invalid_arguments') problems.push(`${m.what}: expected invalid_arguments, got ${r.outcome?.state ?? r.state}${err ? '/' + err.type : ''}`);
          else {
            const pointers = ((err.details?.['violations'] as { pointer: string }[] | undefined) ?? []).map((v) => v.pointer);
            if (!pointers.includes(m.pointer) && (m.parent === undefined || !pointers.includes(m.parent))) problems.push(`${m.what}: invalid_arguments named ${JSON.stringify(pointers)}, expected ${JSON.stringify(m.pointer)}`);
          }
        }
      }
      const failed = problems.length ? { verdict: 'fail' as const, message: problems.join('; ') } : undefined;
      if (effects && !scratch) {
        const why = !c.o.allowEffects ? 'has side effects; run with --allow-effects to call it on scratch resources' : `has side effects and the trial has no scratch resource for it${c.scratchProblem ? ` (${c.scratchProblem})` : ''}`;
        return failed ?? { verdict: 'not_run', message: `invalid arguments refused correctly; a valid call was not made: it ${why}` };
      }
      if (!valid) return failed ?? { verdict: 'inconclusive', message: `no valid arguments: ${sample.ok ? 'none' : sample.reason}` };
      if (HIGH.has(f.permission_level) && !c.answeringBy) return failed ?? { verdict: 'not_run', message: 'invalid arguments refused correctly; a valid call needs confirmation on the device (run with --unattended --control local, or see confirm.high_risk)' };
      const r = await c.call(e, 'valid arguments', device, fn, valid, { confirm_timeout_ms: 30_000 });
      const out = r.outcome;
      if (out?.error?.type === 'invalid_arguments') problems.push(`valid arguments ${JSON.stringify(valid)} were refused: ${out.error.message}`);
      if (out?.state === 'completed') {
        const v = schemaValidator.validate(f.output_schema as object, out.output);
        for (const x of v) problems.push(`output ${x.pointer || '/'}: ${x.message}`);
        if (out.output_valid === false && !v.length) problems.push('the device marked its own output invalid');
      }
      if (problems.length) return { verdict: 'fail', message: problems.join('; ') };
      return { verdict: 'pass', message: out?.state === 'completed' ? 'valid call completed with a valid output; invalid arguments refused' : `valid arguments accepted (the call ended ${out?.state}/${out?.error?.type}, not a contract error); invalid arguments refused` };
    },
  }));
}

/** The run's scratch share, made on first use (with --allow-effects and control only). */
export async function ensureScratch(c: TrialContext): Promise<Scratch | undefined> {
  if (c.scratch || c.scratchProblem) return c.scratch;
  if (!c.control) {
    c.scratchProblem = `a scratch share needs control of the device: ${c.controlProblem}`;
    return undefined;
  }
  try {
    c.scratch = await shareScratch(c.control);
    writeFileSync(join(c.scratch.dir, 'trial-path.txt'), 'aios trial\n');
  } catch (e) {
    c.scratchProblem = `the agent refused the scratch share: ${(e as Error).message}`;
  }
  return c.scratch;
}

/** Arguments pointed at the scratch share where the function takes a root (files.*). */
function scratchArgs(f: Descriptor, valid: Record<string, unknown>, scratch: Scratch | undefined): Record<string, unknown> {
  if (!scratch || !f.id.startsWith('files.')) return valid;
  const props = (f.input_schema as { properties?: Record<string, unknown> }).properties ?? {};
  const out = { ...valid };
  if ('root' in props) out['root'] = scratch.root;
  for (const k of ['path', 'from', 'to', 'destination']) if (k in out && typeof out[k] === 'string') out[k] = `trial-${k}.txt`;
  return out;
}
