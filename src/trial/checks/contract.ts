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
import { m } from '../say.js';
import type { Message } from '../../i18n/index.js';
import type { Trace } from '../types.js';

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
    title: m('trial.t.contract', { fn }),
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
      if (r.validated) e.push({ label: m('trial.e.output_validated'), response: { violations: r.violations ?? [] } });
      return { verdict: r.verdict, message: r.message, ...(r.validated && { output_validated: true }) };
    },
  }));
}

/** A function with side effects that are not files: the trial has no scratch resource to call it on. */
function outsideScratch(f: Descriptor): boolean {
  return !(f.risk?.read_only ?? false) && !f.id.startsWith('files.');
}

/** Problems found, as one message (`a; b; c`). */
function joined(problems: Message[]): Message {
  return problems.reduce((a, b) => m('trial.m.list', { a, b }));
}

async function contract(c: TrialContext, f: Descriptor, device: string, e: Trace[]): Promise<Observed & { validated?: boolean; violations?: unknown[] }> {
  const problems: Message[] = [];
  const effects = !(f.risk?.read_only ?? false);
  const inSchema = f.input_schema as Record<string, unknown>;
  const needsShare = f.id.startsWith('files.') && 'path' in ((inSchema['properties'] as Record<string, unknown> | undefined) ?? {});
  // Files functions get a fresh fixture of their own inside the scratch share, which only --allow-effects makes.
  const scratch = c.o.allowEffects && (needsShare || (effects && f.id.startsWith('files.'))) ? await ensureScratch(c) : undefined;
  // Invalid arguments never reach a handler, so they are safe to send to any function.
  const sample = sampleValid(inSchema);
  const valid = sample.ok ? (scratch && needsShare ? fixtureArgs(f, sample.value as Record<string, unknown>, scratch) : (sample.value as Record<string, unknown>)) : undefined;
  if (valid) {
    for (const x of mutations(inSchema, valid)) {
      const what = m(`trial.m.mut.${x.kind}`, { pointer: x.pointer });
      const r = await c.call(e, m('trial.e.invalid', { what }), device, f.id, x.args);
      const err = r.outcome?.error;
      if (err?.type !== 'invalid_arguments') problems.push(m('trial.m.contract.not_refused', { what, got: `${r.outcome?.state ?? r.state}${err ? '/' + err.type : ''}` }));
      else {
        const pointers = ((err.details?.['violations'] as { pointer: string }[] | undefined) ?? []).map((v) => v.pointer);
        if (!pointers.includes(x.pointer) && (x.parent === undefined || !pointers.includes(x.parent))) problems.push(m('trial.m.contract.wrong_pointer', { what, named: JSON.stringify(pointers), expected: JSON.stringify(x.pointer) }));
      }
    }
  }
  const failed = problems.length ? { verdict: 'fail' as const, message: joined(problems) } : undefined;
  const refused = (rest: Message): Message => m('trial.m.contract.refused_then', { rest });
  if (!valid) return failed ?? { verdict: 'inconclusive', message: refused(m('trial.m.contract.no_valid_call', { reason: sample.ok ? m('trial.m.contract.no_arguments') : sample.why })) };
  const unshared = await nothingSharedFor(c, device, f.id);
  if (outsideScratch(f)) {
    return failed ?? { verdict: 'not_run', message: refused(unshared ? m('trial.m.contract.outside_scratch_unshared', { kind: unshared }) : m('trial.m.contract.outside_scratch')) };
  }
  if ((needsShare || effects) && !scratch) {
    const why = !c.o.allowEffects ? (needsShare ? m('trial.m.contract.needs_fixture') : m('trial.m.contract.needs_effects')) : m('trial.m.contract.no_scratch', { problem: c.scratchProblem ?? m('trial.m.contract.none') });
    return failed ?? { verdict: 'not_run', message: refused(why) };
  }
  if (HIGH.has(f.permission_level) && !c.answeringBy) return failed ?? { verdict: 'not_run', message: refused(m('trial.m.contract.needs_unattended')) };
  const r = await c.call(e, m('trial.e.valid'), device, f.id, valid, { confirm_timeout_ms: 30_000 });
  const out = r.outcome;
  if (out?.error?.type === 'invalid_arguments') problems.push(m('trial.m.contract.valid_refused', { args: JSON.stringify(valid), message: out.error.message }));
  if (out?.error?.type === 'unknown_function' || out?.error?.type === 'function_changed') problems.push(m('trial.m.contract.not_served', { fn: f.id, type: out.error.type, message: out.error.message }));
  if (out?.state !== 'completed') {
    if (problems.length) return { verdict: 'fail', message: joined(problems) };
    // Nothing shared of what it needs: it can only be refused, which is the user's choice, not a fault.
    if (unshared && out?.error?.type === 'permission_denied') return { verdict: 'not_run', message: refused(m('trial.m.contract.unshared', { kind: unshared, message: out.error.message })) };
    // No output, nothing validated: the contract was not observed (a denied permission, a failed execution…).
    const ended = `${out?.state ?? r.state}/${out?.error?.type ?? '-'}${out?.error?.message ? `: ${out.error.message}` : ''}`;
    return { verdict: 'inconclusive', message: refused(m('trial.m.contract.no_output', { ended })) };
  }
  const violations = schemaValidator.validate(f.output_schema as object, out.output);
  for (const x of violations) problems.push(m('trial.m.contract.output_violation', { pointer: x.pointer || '/', message: x.message }));
  if (out.output_valid === false && !violations.length) problems.push(m('trial.m.contract.marked_invalid'));
  if (problems.length) return { verdict: 'fail', message: joined(problems), validated: true, violations };
  return { verdict: 'pass', message: HIGH.has(f.permission_level) && c.answeringBy ? m('trial.m.contract.pass_answered') : m('trial.m.contract.pass'), validated: true, violations };
}

/** The run's scratch share, made on first use (with --allow-effects and control only); `scratchProblem` says why not. */
export async function ensureScratch(c: TrialContext): Promise<Scratch | undefined> {
  if (c.scratch || c.scratchProblem) return c.scratch;
  if (!c.control || !c.o.agentDataDir) {
    c.scratchProblem = m('trial.m.scratch.needs_control', { problem: c.controlProblem });
    return undefined;
  }
  try {
    c.scratch = await shareScratch(c.control, c.o.agentDataDir);
  } catch (e) {
    c.scratchProblem = m('trial.m.scratch.refused', { error: (e as Error).message });
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
