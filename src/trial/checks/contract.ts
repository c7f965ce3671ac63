/**
 * Guide line 3: function ids, input and output parameters match the platform (one check per published
 * function, on every device that publishes it). A check passes only when a valid call completed and the
 * trial validated its output against the function's `output_schema`.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Descriptor } from '../../protocol/messages.js';
import { schemaValidator } from '../../protocol/schema-validator.js';
import { sampleValid, mutations } from '../samples.js';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import type { Observed, TrialContext } from '../context.js';
import { shareScratch, type Scratch } from '../scratch.js';
import { nothingSharedFor } from '../grants.js';

const HIGH = new Set(['high', 'critical']);

/** What a files function's `path` must be: an existing file, a name that does not exist yet, or a folder. */
const FILES_FIXTURE: Record<string, 'new' | 'new_dir' | 'dir'> = {
  'files.write_text': 'new',
  'files.write_bytes': 'new',
  'files.mkdir': 'new_dir',
  'files.list_dir': 'dir',
  'files.search': 'dir',
};

/** One row per function any device publishes; on each device it publishes it. */
export async function contractChecks(ctx: TrialContext): Promise<CheckDef[]> {
  const ids = new Set<string>();
  for (const d of ctx.o.devices) for (const f of await ctx.functions(d)) ids.add(f.id);
  return [...ids].sort().map((fn) => ({
    id: `contract.${fn}`,
    title: `${fn}: a valid call completes and its output matches its schema; invalid arguments are refused at the right pointer`,
    guide: '3',
    // Required only where the tester can make it observable: not for an effect the trial has no scratch
    // resource for (it never calls those), nor for a kind of resource the device shares nothing of.
    required: async (c: TrialContext, device: string) => {
      const f = (await c.functions(device)).find((x) => x.id === fn);
      return !(f && outsideScratch(f)) && !(await nothingSharedFor(c, device, fn));
    },
    perDevice: true,
    needs: ONLINE,
    appliesTo: async (c: TrialContext, device: string) => (await c.functions(device)).some((f) => f.id === fn),
    run: async (c, e, device) => {
      const f = (await c.functions(device)).find((x) => x.id === fn)!;
      const r = await contract(c, f, device, e);
      if (r.validated) e.push({ label: 'output validated against output_schema by the trial', response: { violations: r.violations ?? [] } });
      return { verdict: r.verdict, message: r.message, ...(r.validated && { output_validated: true }) };
    },
  }));
}

/** A function with side effects that are not files: the trial has no scratch resource to call it on. */
function outsideScratch(f: Descriptor): boolean {
  return !(f.risk?.read_only ?? false) && !f.id.startsWith('files.');
}

async function contract(c: TrialContext, f: Descriptor, device: string, e: Parameters<CheckDef['run']>[1]): Promise<Observed & { validated?: boolean; violations?: unknown[] }> {
  const problems: string[] = [];
  const effects = !(f.risk?.read_only ?? false);
  const inSchema = f.input_schema as Record<string, unknown>;
  const needsShare = f.id.startsWith('files.') && 'path' in ((inSchema['properties'] as Record<string, unknown> | undefined) ?? {});
  // Files functions get a fresh fixture of their own inside the scratch share, which only --allow-effects makes.
  const scratch = c.o.allowEffects && (needsShare || (effects && f.id.startsWith('files.'))) ? await ensureScratch(c) : undefined;
  // Invalid arguments never reach a handler, so they are safe to send to any function.
  const sample = sampleValid(inSchema);
  const valid = sample.ok ? (scratch && needsShare ? fixtureArgs(f, sample.value as Record<string, unknown>, scratch) : (sample.value as Record<string, unknown>)) : undefined;
  if (valid) {
    for (const m of mutations(inSchema, valid)) {
      const r = await c.call(e, `invalid: ${m.what}`, device, f.id, m.args);
      const err = r.outcome?.error;
      if (err?.type !== 'invalid_arguments') problems.push(`${m.what}: expected invalid_arguments, got ${r.outcome?.state ?? r.state}${err ? '/' + err.type : ''}`);
      else {
        const pointers = ((err.details?.['violations'] as { pointer: string }[] | undefined) ?? []).map((v) => v.pointer);
        if (!pointers.includes(m.pointer) && (m.parent === undefined || !pointers.includes(m.parent))) problems.push(`${m.what}: invalid_arguments named ${JSON.stringify(pointers)}, expected ${JSON.stringify(m.pointer)}`);
      }
    }
  }
  const failed = problems.length ? { verdict: 'fail' as const, message: problems.join('; ') } : undefined;
  const refused = 'invalid arguments refused correctly; ';
  if (!valid) return failed ?? { verdict: 'inconclusive', message: `${refused}no valid call was made: ${sample.ok ? 'no arguments' : sample.reason}` };
  const unshared = await nothingSharedFor(c, device, f.id);
  if (outsideScratch(f)) {
    const also = unshared ? ` (and nothing is shared for ${unshared} on this device)` : '';
    return failed ?? { verdict: 'not_run', message: `${refused}a valid call was not made: it has side effects outside any scratch folder, which the trial never causes; try it by hand (the bridge console)${also}` };
  }
  if ((needsShare || effects) && !scratch) {
    const why = !c.o.allowEffects
      ? needsShare
        ? 'needs a file of its own in a scratch share: run with --allow-effects --control local'
        : 'has side effects: run with --allow-effects --control local to call it on scratch resources'
      : `needs a scratch share, and ${c.scratchProblem ?? 'there is none'}`;
    return failed ?? { verdict: 'not_run', message: `${refused}a valid call was not made: it ${why}` };
  }
  if (HIGH.has(f.permission_level) && !c.answeringBy) return failed ?? { verdict: 'not_run', message: `${refused}a valid call needs confirmation on the device: run with --unattended --control local (confirm.high_risk checks the prompt itself)` };
  const r = await c.call(e, 'valid arguments', device, f.id, valid, { confirm_timeout_ms: 30_000 });
  const out = r.outcome;
  if (out?.error?.type === 'invalid_arguments') problems.push(`valid arguments ${JSON.stringify(valid)} were refused: ${out.error.message}`);
  if (out?.error?.type === 'unknown_function' || out?.error?.type === 'function_changed') problems.push(`the device does not serve ${f.id} as published: ${out.error.type}: ${out.error.message}`);
  if (out?.state !== 'completed') {
    if (problems.length) return { verdict: 'fail', message: problems.join('; ') };
    // Nothing shared of what it needs: it can only be refused, which is the user's choice, not a fault.
    if (unshared && out?.error?.type === 'permission_denied') return { verdict: 'not_run', message: `${refused}nothing is shared for ${unshared} on this device, so the valid call could only end permission_denied (${out.error.message}); share one (the tray's settings, or grants.${unshared}) to test it, or turn the function off` };
    // No output, nothing validated: the contract was not observed (a denied permission, a failed execution…).
    return { verdict: 'inconclusive', message: `${refused}the valid call ended ${out?.state ?? r.state}/${out?.error?.type ?? '-'}${out?.error?.message ? `: ${out.error.message}` : ''}, so no output was validated` };
  }
  const violations = schemaValidator.validate(f.output_schema as object, out.output);
  for (const x of violations) problems.push(`output ${x.pointer || '/'}: ${x.message}`);
  if (out.output_valid === false && !violations.length) problems.push('the device marked its own output invalid');
  if (problems.length) return { verdict: 'fail', message: problems.join('; '), validated: true, violations };
  const answered = HIGH.has(f.permission_level) && c.answeringBy ? ' (its prompt was answered by the trial, not a person: --unattended)' : '';
  return { verdict: 'pass', message: `a valid call completed and its output matches output_schema; invalid arguments refused${answered}`, validated: true, violations };
}

/** The run's scratch share, made on first use (with --allow-effects and control only); `scratchProblem` says why not. */
export async function ensureScratch(c: TrialContext): Promise<Scratch | undefined> {
  if (c.scratch || c.scratchProblem) return c.scratch;
  if (!c.control || !c.o.agentDataDir) {
    c.scratchProblem = `a scratch share needs control of the device: ${c.controlProblem}`;
    return undefined;
  }
  try {
    c.scratch = await shareScratch(c.control, c.o.agentDataDir);
  } catch (e) {
    c.scratchProblem = `the agent refused the scratch share (${(e as Error).message})`;
  }
  return c.scratch;
}

let fixtures = 0;

/**
 * A fresh fixture for one check in its own folder of the scratch share, and the arguments pointing at it:
 * `path` is an existing file (a file is a file), a new name for functions that create one, or the folder
 * for functions that list; `to_path` is a new name; every root is the scratch share's.
 */
export function fixtureArgs(f: Descriptor, valid: Record<string, unknown>, scratch: Scratch): Record<string, unknown> {
  const props = (f.input_schema as { properties?: Record<string, unknown> }).properties ?? {};
  const dir = mkdtempSync(join(scratch.dir, `${f.id.replace(/[^a-z0-9]+/gi, '-')}-${++fixtures}-`));
  const rel = (p: string) => relative(scratch.dir, p).split('\\').join('/');
  const file = join(dir, 'fixture.txt');
  writeFileSync(file, 'aios trial fixture\n');
  mkdirSync(join(dir, 'sub'));
  const out = { ...valid };
  for (const k of ['root', 'to_root']) if (k in props) out[k] = scratch.root;
  const kind = FILES_FIXTURE[f.id];
  out['path'] = kind === 'new' ? rel(join(dir, 'new.txt')) : kind === 'new_dir' ? rel(join(dir, 'new-folder')) : kind === 'dir' ? rel(dir) : rel(file);
  if ('to_path' in props) out['to_path'] = rel(join(dir, 'moved.txt'));
  if (f.id === 'files.search' && 'pattern' in props) out['pattern'] = '*.txt';
  return out;
}
