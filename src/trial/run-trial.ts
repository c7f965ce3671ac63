/**
 * `aios-device trial`: the end-plugin guide's trial checklist (试运行与联调), run against a live bridge and
 * device through the runtime API only, as a real runtime would. The checks are a table (src/trial/checks/,
 * one file per group); each records its evidence and a verdict, and passes only on behaviour it observed.
 * docs/qa-trial.md explains each check, its line in the guide and the run's rule.
 */
import { BridgeHttpError, BridgeUnreachableError } from '../runtime-client/client.js';
import type { Outcome } from '../protocol/messages.js';
import { CLIENT_PROTOCOL_VERSION } from '../protocol/messages.js';
import { APP_VERSION } from '../version.js';
import { looksSecret, SECRET_KEY } from '../consent/redact.js';
import { LocalControl } from './local-control.js';
import { TrialContext, type TrialOptions } from './context.js';
import type { CheckDef, CheckGroup } from './check.js';
import { clientChecks } from './checks/client.js';
import { identityChecks } from './checks/identity.js';
import { contractChecks } from './checks/contract.js';
import { permissionsChecks } from './checks/permissions.js';
import { faultsChecks } from './checks/faults.js';
import { confirmChecks } from './checks/confirm.js';
import { extraChecks } from './checks/extra.js';
import { unshareScratch } from './scratch.js';
import { GUIDE_LINES, VERDICTS, weakest, type CheckResult, type Evidence, type LineResult, type Trace, type TrialReport, type Verdict } from './types.js';
import { m, render, renderParams, TrialError } from './say.js';
import type { Locale, Message } from '../i18n/index.js';

export type { TrialOptions };

/** The table's groups, in the order they run (a check's preconditions always come before it). */
const GROUPS: CheckGroup[] = [clientChecks, identityChecks, contractChecks, permissionsChecks, faultsChecks, confirmChecks, extraChecks];

/** Every check of the table for this run (contract's rows depend on what the devices publish). */
export async function checkTable(ctx: TrialContext): Promise<CheckDef[]> {
  const out: CheckDef[] = [];
  for (const g of GROUPS) out.push(...(await g(ctx)));
  return out;
}

/** The checks to run: those `--only` chooses (all without it) and, transitively, what they need. */
export function selectChecks(table: CheckDef[], only: string[] | undefined): Map<string, { precondition: boolean }> {
  const byId = new Map(table.map((c) => [c.id, c]));
  const chosen = new Map<string, { precondition: boolean }>();
  const take = (c: CheckDef, precondition: boolean) => {
    for (const n of c.needs ?? []) {
      const need = byId.get(n);
      if (need) take(need, true);
    }
    const had = chosen.get(c.id);
    if (!had || (had.precondition && !precondition)) chosen.set(c.id, { precondition });
  };
  for (const c of table) if (!only?.length || only.some((p) => matches(c.id, p))) take(c, false);
  return chosen;
}

/** Runs the trial and returns its report; `report.ok` is true only when no required check failed the run. */
export async function runTrial(o: TrialOptions): Promise<TrialReport> {
  const started = new Date().toISOString();
  const ctx = new TrialContext(o);

  if (o.control === 'local') {
    if (!o.agentDataDir) ctx.controlProblem = m('trial.m.control.needs_dir');
    else {
      try {
        ctx.control = await LocalControl.connect(o.agentDataDir);
      } catch (e) {
        ctx.controlProblem = m('trial.m.control.failed', { error: (e as Error).message });
      }
    }
  }
  if (o.unattended) {
    if (ctx.control) ctx.answeringBy = await ctx.control.answerPrompts('allow_once');
    else ctx.controlProblem = m('trial.m.control.unattended', { problem: ctx.controlProblem });
  }

  try {
    const table = await checkTable(ctx);
    const chosen = selectChecks(table, o.only);
    for (const def of table) {
      const how = chosen.get(def.id);
      if (!how) continue;
      const devices = def.perDevice ? o.devices : [ctx.primary];
      for (const device of devices) {
        if (def.appliesTo && !(await def.appliesTo(ctx, device))) continue;
        const r = await runOne(ctx, def, device, how.precondition);
        ctx.results.push(r);
        o.onCheck?.(r);
      }
    }
  } finally {
    // Whatever happens, the temporary read-write share leaves the device and the control link closes.
    if (ctx.scratch && ctx.control) await unshareScratch(ctx.control, ctx.scratch).catch(() => undefined);
    ctx.control?.close();
  }

  const checks = ctx.results;
  const lang: Locale = o.lang ?? 'en';
  const allowed = o.allowNotRun ?? [];
  const requiredFailed = [...new Set(checks.filter((c) => c.required && failsRun(c.verdict, allowed.some((p) => matches(c.id, p)))).map((c) => c.id))];
  const count = (v: Verdict) => checks.filter((c) => c.verdict === v).length;
  const contract = checks.filter((c) => c.id.startsWith('contract.') && c.verdict !== 'skipped');
  const clients: Record<string, unknown>[] = [];
  for (const id of o.devices) clients.push(await ctx.device(id).catch((x: unknown) => ({ device_id: id, error: String(x) })));
  const minClient = clients.map((c) => c['min_client_version'] as string | null | undefined).find((v) => v !== undefined) ?? null;
  // Evidence is for reading: secrets (the runtime token, secret-named keys, key-looking strings) are redacted.
  for (const c of checks) c.evidence = c.evidence.map((x) => redactEvidence(x, o.runtimeToken) as Evidence);
  return {
    lang,
    tool: { name: 'aios-device trial', version: APP_VERSION, protocol_version: CLIENT_PROTOCOL_VERSION },
    started_at: started,
    finished_at: new Date().toISOString(),
    bridge: o.bridge,
    devices: o.devices,
    environment: { platform: process.platform, arch: process.arch, node: process.version, bridge_min_client_version: minClient, clients: clients.map((c) => pick(c, ['device_id', 'name', 'platform', 'arch', 'client_version', 'protocol_version', 'online', 'last_refused_hello', 'error'])) },
    options: { only: o.only ?? [], skip: o.skip ?? [], unattended: !!o.unattended, allow_effects: !!o.allowEffects, control: o.control ?? 'none', allow_not_run: allowed, prompts_answered_by_trial: ctx.answeringBy ? (ctx.control?.answered.length ?? 0) : 0 },
    summary: {
      ...(Object.fromEntries(VERDICTS.map((v) => [v, count(v)])) as Record<Verdict, number>),
      required_failed: requiredFailed,
      outputs_validated: { validated: contract.filter((c) => c.output_validated).length, functions: contract.length },
    },
    ...(ctx.scratch ? { scratch: { root: ctx.scratch.root, dir: ctx.scratch.dir } } : ctx.scratchProblem ? { scratch: { problem: render(ctx.scratchProblem, lang) } } : {}),
    ok: requiredFailed.length === 0 && checks.length > 0,
    lines: lineResults(checks),
    checks,
  };
}

/** One check on one device: skipped by --skip, not run when a precondition did not pass, else what it observed. */
async function runOne(ctx: TrialContext, def: CheckDef, device: string, precondition: boolean): Promise<CheckResult> {
  const lang = ctx.o.lang ?? 'en';
  const done = (verdict: Verdict, msg: Message, trace: Trace[], extra: Partial<CheckResult> = {}): CheckResult => ({
    ...base,
    verdict,
    message: render(msg, lang),
    message_key: msg.key,
    ...(msg.params && { message_params: renderParams(msg, lang) }),
    ...extra,
    evidence: trace.map((x) => ({ ...x, label: render(x.label, lang) })),
  });
  const base = {
    id: def.id,
    title: render(def.title, lang),
    guide: def.guide,
    required: typeof def.required === 'function' ? await def.required(ctx, device) : def.required,
    ...(def.perDevice && { device }),
    ...(precondition && { precondition: true }),
  };
  if (ctx.o.skip?.some((p) => matches(def.id, p))) return done('skipped', m('trial.m.skipped'), []);
  for (const n of def.needs ?? []) {
    const r = ctx.result(n, device);
    if (r?.verdict !== 'pass') return done('not_run', r ? m('trial.m.needs', { id: n, verdict: r.verdict, message: r.message }) : m('trial.m.needs_not_run', { id: n }), []);
  }
  const evidence: Trace[] = [];
  try {
    const r = await def.run(ctx, evidence, device);
    return done(r.verdict, r.message, evidence, r.output_validated ? { output_validated: true } : {});
  } catch (e) {
    return done('fail', describeError(e, ctx.o.bridge), evidence);
  }
}

/** `id` is `p` or inside it (`contract` matches `contract.files.read_text`). */
function matches(id: string, p: string): boolean {
  return id === p || id.startsWith(p + '.');
}

/**
 * The run's rule: a required check fails the run when it failed, or when it was inconclusive or not run and
 * `--allow-not-run` does not name it. `simulated` and `skipped` (by --skip) do not fail it; the report shows them.
 */
export function failsRun(v: Verdict, allowedNotRun: boolean): boolean {
  return v === 'fail' || ((v === 'inconclusive' || v === 'not_run') && !allowedNotRun);
}

/** The guide's lines in order, each with the weakest verdict of its required checks (of all, when none is required). */
export function lineResults(checks: CheckResult[]): LineResult[] {
  return Object.keys(GUIDE_LINES).map((line) => {
    const cs = checks.filter((c) => c.guide === line);
    const req = cs.filter((c) => c.required);
    return { line, verdict: weakest((req.length ? req : cs).map((c) => c.verdict)), checks: [...new Set(cs.map((c) => c.id))] };
  });
}

/** `v` with secrets replaced by "<redacted>": the runtime token anywhere, values under secret-named keys, key-looking strings. */
export function redactEvidence(v: unknown, token: string, key = ''): unknown {
  if (key && key !== 'label' && SECRET_KEY.test(key) && v !== null && typeof v !== 'object') return '<redacted>';
  if (typeof v === 'string') return v.includes(token) ? v.split(token).join('<redacted>') : looksSecret(v) && !/\s/.test(v) ? '<redacted>' : v;
  if (Array.isArray(v)) return v.map((x) => redactEvidence(x, token));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redactEvidence(x, token, k)]));
  return v;
}

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]]));
}

/** One sentence for a failure the trial itself met (the bridge down, a refused request). */
export function describeError(e: unknown, bridge: string): Message {
  if (e instanceof TrialError) return e.msg;
  if (e instanceof BridgeHttpError) return m('trial.m.error.http', { status: e.status, type: e.error.type, message: e.error.message });
  if (e instanceof BridgeUnreachableError) return e.said;
  const text = e instanceof Error ? e.message : String(e);
  return text === 'fetch failed' ? m('trial.m.error.unreachable', { bridge }) : m('trial.m.error.other', { error: text });
}

export type { Outcome };
