/**
 * `aios-device trial`: the end-plugin guide's trial checklist (试运行与联调), run against a live bridge and
 * device through the runtime API only, as a real runtime would. Every check records its evidence and a
 * verdict; a check that needs control the trial was not given is `not_run`, never `pass`.
 * docs/qa-trial.md explains each check and its line in the guide.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { RuntimeClient, BridgeHttpError, BridgeUnreachableError, type RuntimeProfile } from '../cli/runtime-client.js';
import type { CallRecord } from '../bridge/store.js';
import type { Descriptor, Outcome } from '../protocol/messages.js';
import { PROTOCOL_VERSION } from '../protocol/messages.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import { APP_VERSION } from '../version.js';
import { compareVersions } from '../bridge/versions.js';
import { sampleValid, mutations } from './samples.js';
import { LocalControl } from './local-control.js';
import { GUIDE_LINES, VERDICTS, weakest, type CheckResult, type Evidence, type LineResult, type TrialReport, type Verdict } from './types.js';

/** What `trial` was asked to do. */
export interface TrialOptions {
  bridge: string;
  runtimeToken: string;
  workspace: string;
  devices: string[];
  only?: string[];
  skip?: string[];
  unattended?: boolean;
  allowEffects?: boolean;
  allowNotRun?: string[];
  control?: 'none' | 'local';
  agentDataDir?: string;
  expectWorkspace?: string;
  expectUser?: string;
  /** The CLI entry to run for the "bridge unreachable" check (this program). */
  cli?: { node: string; args: string[] };
  /** Each check's progress line (the CLI prints them). */
  onCheck?(r: CheckResult): void;
}

const HIGH = new Set(['high', 'critical']);

/** Runs the trial and returns its report; `report.ok` is true only when every required check passed. */
export async function runTrial(o: TrialOptions): Promise<TrialReport> {
  const started = new Date().toISOString();
  const primary = o.devices[0]!;
  const profile: RuntimeProfile = { bridge_url: o.bridge, token: o.runtimeToken, workspace_id: o.workspace, device_id: primary };
  const client = new RuntimeClient(profile);
  const checks: CheckResult[] = [];
  const wanted = (id: string) => !o.only?.length || o.only.some((p) => matches(id, p));
  const add = (r: CheckResult) => {
    checks.push(r);
    o.onCheck?.(r);
  };
  const check = async (id: string, title: string, guide: string, required: boolean, body: (ev: Evidence[]) => Promise<{ verdict: Verdict; message: string }>) => {
    if (!wanted(id)) return;
    if (o.skip?.some((p) => matches(id, p))) return add({ id, title, guide, required, verdict: 'skipped', message: 'skipped by --skip', evidence: [] });
    const evidence: Evidence[] = [];
    let r: { verdict: Verdict; message: string };
    try {
      r = await body(evidence);
    } catch (e) {
      r = { verdict: 'fail', message: describeError(e, o.bridge) };
    }
    add({ id, title, guide, required, verdict: r.verdict, message: r.message, evidence });
  };
  const ev = async <T>(evidence: Evidence[], label: string, request: unknown, f: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      const response = await f();
      evidence.push({ label, request, response, ms: Math.round(performance.now() - t0) });
      return response;
    } catch (e) {
      evidence.push({ label, request, response: e instanceof BridgeHttpError ? { http_status: e.status, error: e.error } : { error: String(e) }, ms: Math.round(performance.now() - t0) });
      throw e;
    }
  };
  const call = (evidence: Evidence[], label: string, fn: string, args: Record<string, unknown>, opts: Parameters<RuntimeClient['call']>[2] = {}) =>
    ev(evidence, label, { function: fn, arguments: args, ...opts }, async () => (await client.call(fn, args, { device_id: primary, requester: { kind: 'qa', id: 'aios-trial', name: 'AIOS trial' }, ...opts })).record);

  let control: LocalControl | undefined;
  let controlProblem = 'the trial was not given control of the device (--control local)';
  if (o.control === 'local') {
    if (!o.agentDataDir) controlProblem = '--control local needs --agent-data-dir (the agent\'s data folder)';
    else {
      try {
        control = await LocalControl.connect(o.agentDataDir);
      } catch (e) {
        controlProblem = (e as Error).message;
      }
    }
  }
  let answeringBy: string | undefined;
  if (o.unattended) {
    if (control) answeringBy = await control.answerPrompts('allow_once');
    else controlProblem = `--unattended needs --control local: ${controlProblem}`;
  }

  // 1. Protocol and client version; the device's state as the bridge knows it.
  let device: Record<string, unknown> | undefined;
  const clients: Record<string, unknown>[] = [];
  let minClient: string | null | undefined;
  await check('client.version', 'The device is online and its client and protocol versions are supported', '1', true, async (e) => {
    device = await ev(e, 'GET /v1/devices/' + primary, null, () => client.device(primary));
    minClient = (device['min_client_version'] as string | null | undefined) ?? null;
    for (const id of o.devices) clients.push(id === primary ? device : await client.device(id).catch((x: unknown) => ({ device_id: id, error: String(x) })));
    const refused = device['last_refused_hello'] as { type?: string; message?: string } | null | undefined;
    if (!device['online']) {
      if (refused?.type === 'client_outdated') return { verdict: 'fail', message: `client_outdated: the device's client ${String((refused as { client_version?: string }).client_version || device['client_version'] || '?')} is below the bridge's minimum ${String(minClient)}; update AIOS Device on the device` };
      if (refused?.type) return { verdict: 'fail', message: `the bridge refused the device's last hello: ${refused.type}: ${refused.message ?? ''}` };
      return { verdict: 'fail', message: 'the device is offline: start the agent (or the tray) on it and sign it in' };
    }
    const v = String(device['client_version'] ?? '');
    if (minClient && compareVersions(v, minClient) < 0) return { verdict: 'fail', message: `client ${v} is below the bridge's minimum ${minClient}` };
    const pv = device['protocol_version'];
    if (pv !== undefined && pv !== null && String(pv).split('.')[0] !== PROTOCOL_VERSION.split('.')[0]) return { verdict: 'fail', message: `the session speaks protocol ${String(pv)}, this trial speaks ${PROTOCOL_VERSION}` };
    return { verdict: 'pass', message: `online; client ${v}${minClient ? ` (bridge minimum ${minClient})` : ''}${pv ? `, protocol ${String(pv)}` : ''}` };
  });
  const online = device?.['online'] === true;
  const notOnline = { verdict: 'not_run' as Verdict, message: 'the device is not online (see client.version)' };

  // 2. Identity.
  await check('identity', 'The device is signed in to the expected workspace and user', '2', true, async (e) => {
    const d = device ?? (await ev(e, 'GET /v1/devices/' + primary, null, () => client.device(primary)));
    e.push({ label: 'identity as the bridge knows it', response: { workspace_id: d['workspace_id'], user_id: d['user_id'], device_id: d['device_id'] } });
    const wrong: string[] = [];
    if (d['workspace_id'] !== (o.expectWorkspace ?? o.workspace)) wrong.push(`workspace ${String(d['workspace_id'])}, expected ${o.expectWorkspace ?? o.workspace}`);
    if (o.expectUser && d['user_id'] !== o.expectUser) wrong.push(`user ${String(d['user_id'])}, expected ${o.expectUser}`);
    if (wrong.length) return { verdict: 'fail', message: 'signed in to the wrong place: ' + wrong.join('; ') };
    if (!online) return notOnline;
    // The device's own word, through a call: device.info names the identity the agent holds.
    const fns = (d['functions'] as Descriptor[] | undefined) ?? [];
    if (fns.some((f) => f.id === 'device.info')) {
      const r = await call(e, 'device.info', 'device.info', {});
      const out = r.outcome?.output as Record<string, unknown> | undefined;
      const said = (out?.['device'] as Record<string, unknown> | undefined)?.['id'] ?? out?.['device_id'];
      if (said !== undefined && said !== primary) return { verdict: 'fail', message: `the bridge routed the call to a device that says it is ${String(said)}, not ${primary}` };
    }
    return { verdict: 'pass', message: `workspace ${String(d['workspace_id'])}, user ${String(d['user_id'])}` };
  });

  // 3. Contract, per published function.
  const functions = ((device?.['functions'] as Descriptor[] | undefined) ?? []).slice().sort((a, b) => a.id.localeCompare(b.id));
  let scratch: { dir: string; root: string } | undefined;
  if (o.allowEffects && control && functions.some((f) => f.id.startsWith('files.'))) scratch = await shareScratch(control).catch(() => undefined);
  for (const f of functions) {
    await check(`contract.${f.id}`, `${f.id}: valid arguments are accepted and the output matches its schema; invalid ones are refused at the right pointer`, '3', true, async (e) => {
      if (!online) return notOnline;
      const problems: string[] = [];
      const effects = !(f.risk?.read_only ?? false);
      // Invalid arguments never reach a handler, so they are safe to send to any function.
      const sample = sampleValid(f.input_schema as Record<string, unknown>);
      const valid = sample.ok ? scratchArgs(f, sample.value as Record<string, unknown>, scratch) : undefined;
      if (valid) {
        for (const m of mutations(f.input_schema as Record<string, unknown>, valid)) {
          const r = await call(e, `invalid: ${m.what}`, f.id, m.args);
          const err = r.outcome?.error;
          if (err?.type !== 'invalid_arguments') problems.push(`${m.what}: expected invalid_arguments, got ${r.outcome?.state ?? r.state}${err ? '/' + err.type : ''}`);
          else {
            const pointers = ((err.details?.['violations'] as { pointer: string }[] | undefined) ?? []).map((v) => v.pointer);
            if (!pointers.includes(m.pointer) && (m.parent === undefined || !pointers.includes(m.parent))) problems.push(`${m.what}: invalid_arguments named ${JSON.stringify(pointers)}, expected ${JSON.stringify(m.pointer)}`);
          }
        }
      }
      if (effects && !(o.allowEffects && scratch && f.id.startsWith('files.'))) {
        const why = !o.allowEffects ? 'has side effects; run with --allow-effects to call it on scratch resources' : 'has side effects and the trial has no scratch resource for it';
        return problems.length ? { verdict: 'fail', message: problems.join('; ') } : { verdict: 'not_run', message: `invalid arguments refused correctly; a valid call was not made: it ${why}` };
      }
      if (!valid) return problems.length ? { verdict: 'fail', message: problems.join('; ') } : { verdict: 'inconclusive', message: `no valid arguments: ${sample.ok ? 'none' : sample.reason}` };
      if (HIGH.has(f.permission_level) && !answeringBy) return problems.length ? { verdict: 'fail', message: problems.join('; ') } : { verdict: 'not_run', message: 'invalid arguments refused correctly; a valid call needs confirmation on the device (run with --unattended --control local, or see confirm.high_risk)' };
      const r = await call(e, 'valid arguments', f.id, valid, { confirm_timeout_ms: 30_000 });
      const out = r.outcome;
      if (out?.error?.type === 'invalid_arguments') problems.push(`valid arguments ${JSON.stringify(valid)} were refused: ${out.error.message}`);
      if (out?.state === 'completed') {
        const v = schemaValidator.validate(f.output_schema as object, out.output);
        for (const x of v) problems.push(`output ${x.pointer || '/'}: ${x.message}`);
        if (out.output_valid === false && !v.length) problems.push('the device marked its own output invalid');
      }
      if (problems.length) return { verdict: 'fail', message: problems.join('; ') };
      return { verdict: 'pass', message: out?.state === 'completed' ? 'valid call completed with a valid output; invalid arguments refused' : `valid arguments accepted (the call ended ${out?.state}/${out?.error?.type}, not a contract error); invalid arguments refused` };
    });
  }

  // 4. Permissions: something is granted, and an ungranted resource is refused.
  const hasFiles = functions.some((f) => f.id.startsWith('files.'));
  await check('permissions.granted', 'The device has shared what its functions need (a folder for the files functions)', '4', hasFiles && !!control, async (e) => {
    if (!hasFiles) return { verdict: 'not_run', message: 'the device publishes no files functions' };
    // What the user shared is not visible through the runtime API (by design); the device's own controls say.
    if (!control) return { verdict: 'not_run', message: `what the user shared is visible only on the device: ${controlProblem}` };
    const g = await ev(e, 'control.grants.list', {}, () => control!.call('control.grants.list')).catch(() => undefined);
    if (!g) return { verdict: 'not_run', message: 'the agent offers no control.grants.list' };
    const files = filesGrants(g).filter((x) => x['alias'] !== scratch?.root && x['id'] !== scratch?.dir);
    if (!files.length) return { verdict: 'fail', message: 'no folder is shared on the device, so the files functions can do nothing (share one in the tray\'s settings or under grants.files)' };
    return { verdict: 'pass', message: `${files.length} shared folder(s)` };
  });
  await check('permissions.denied', 'A call on an ungranted resource ends permission_denied, before any prompt', '4', true, async (e) => {
    if (!online) return notOnline;
    const probe = functions.find((f) => f.id === 'files.read_text');
    if (!probe) return { verdict: 'not_run', message: 'no function with a resource the trial knows how to probe (files.read_text)' };
    const r = await call(e, 'files.read_text outside every share', 'files.read_text', { root: `aios-trial-not-shared-${randomUUID().slice(0, 8)}`, path: 'x.txt' });
    const err = r.outcome?.error;
    if (err?.type !== 'permission_denied') return { verdict: 'fail', message: `expected permission_denied, got ${r.outcome?.state}/${err?.type ?? 'no error'}` };
    if (r.timeline.some((t) => t.state === 'awaiting_confirmation')) return { verdict: 'fail', message: 'permission_denied, but only after asking the user' };
    return { verdict: 'pass', message: `permission_denied: ${err.message}` };
  });

  // 5. Faults that surface as visible errors.
  await check('faults.device_offline', 'A call to a device that is not connected is refused with a visible, typed error (device_offline)', '5', true, async (e) => {
    // A device of the workspace the bridge knows but that is offline gives the real thing (409 device_offline);
    // with none, an id the bridge does not know must still be a typed refusal, never a hang.
    const list = await ev(e, 'GET /v1/devices', null, () => client.devices());
    const offline = list.devices.find((d) => d['online'] === false && !o.devices.includes(String(d['device_id'])));
    const target = offline ? String(offline['device_id']) : `dev_aios_trial_offline_${randomUUID().slice(0, 8)}`;
    try {
      const r = await ev(e, `call ${offline ? 'an offline' : 'an unknown'} device`, { device_id: target, function: 'device.info' }, async () => (await client.call('device.info', {}, { device_id: target, wait: false })).record);
      return { verdict: 'fail', message: `the bridge accepted a call to a device that is not connected (${r.state})` };
    } catch (x) {
      if (!(x instanceof BridgeHttpError)) throw x;
      if (x.error.type === 'device_offline') return { verdict: 'pass', message: `HTTP ${x.status} device_offline: ${x.error.message}` };
      // A 404 for a made-up id says nothing about an offline device: never a pass (issue #30).
      if (!offline && x.status === 404) return { verdict: 'not_run', message: `no offline device in the workspace to address (an unknown device was refused: HTTP 404 ${x.error.type}); taking a device's link down needs --control local` };
      return { verdict: 'fail', message: `expected device_offline, got HTTP ${x.status} ${x.error.type}` };
    }
  });
  await check('faults.bridge_unreachable', 'With the bridge unreachable, the CLI says so clearly, names the URL and exits non-zero', '5', true, async (e) => {
    if (!o.cli) return { verdict: 'not_run', message: 'no CLI to run' };
    const dead = await closedPortUrl();
    const tmp = mkdtempSync(join(tmpdir(), 'aios-trial-'));
    try {
      const prof = join(tmp, 'runtime.json');
      writeFileSync(prof, JSON.stringify({ bridge_url: dead, token: 'x', workspace_id: o.workspace, device_id: primary }), { mode: 0o600 });
      const args = [...o.cli.args, 'invoke', 'device.info', '--runtime', prof];
      const r = await run(o.cli.node, args, 60_000);
      e.push({ label: 'aios-device invoke against a closed port', request: { url: dead, argv: ['invoke', 'device.info'] }, response: { exit: r.code, stderr: r.err.slice(0, 2000), stdout: r.out.slice(0, 2000) } });
      const text = r.err + r.out;
      if (r.code === 0) return { verdict: 'fail', message: 'invoke exited 0 with the bridge down' };
      if (!text.includes(new URL(dead).host)) return { verdict: 'fail', message: `the error does not name the bridge's address: ${firstLine(text)}` };
      if (/^\s*$/.test(text) || /TypeError|at .*\.(ts|js):\d+/.test(text)) return { verdict: 'fail', message: `the error is not a clear message: ${firstLine(text)}` };
      return { verdict: 'pass', message: `exit ${r.code}: ${firstLine(text)}` };
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
  const wait = functions.find((f) => f.id === 'diagnostics.wait');
  const noWait = { verdict: 'not_run' as Verdict, message: 'needs a function that takes time: enable diagnostics on the device (handlers.diagnostics.enabled: true) for diagnostics.wait' };
  await check('faults.timeout', 'A call that runs past its timeout ends failed/timeout', '5', true, async (e) => {
    if (!online) return notOnline;
    if (!wait) return noWait;
    const r = await call(e, 'diagnostics.wait 5000 ms with timeout_ms 300', 'diagnostics.wait', { ms: 5000 }, { timeout_ms: 300 });
    const out = r.outcome;
    if (out?.state === 'failed' && out.error?.type === 'timeout') {
      // A visible error is also a true one: it names the budget this call had, not the function's default.
      if (/\d+ ms/.test(out.error.message) && !out.error.message.includes('300 ms')) return { verdict: 'fail', message: `failed/timeout, but the message names another budget than the call's 300 ms: ${out.error.message}` };
      return { verdict: 'pass', message: `failed/timeout: ${out.error.message}` };
    }
    return { verdict: 'fail', message: `expected failed/timeout, got ${out?.state ?? r.state}/${out?.error?.type ?? '-'}` };
  });

  // 6. High-risk calls are confirmed.
  await check('confirm.high_risk', 'A high-risk call waits for the user\'s confirmation before it runs', '6', true, async (e) => {
    if (!online) return notOnline;
    const fn = functions.find((f) => f.id === 'diagnostics.confirm') ?? (scratch ? functions.find((f) => f.id === 'files.write_text') : undefined);
    if (!fn) return { verdict: 'not_run', message: 'no high-risk function the trial may call: enable diagnostics (diagnostics.confirm), or run with --allow-effects --control local (files.write_text in a scratch share)' };
    if (!answeringBy) process.stderr.write(`trial: answer the prompt for ${fn.id} on the device now (allow it)\n`);
    const args = fn.id === 'files.write_text' ? { root: scratch!.root, path: 'trial-confirm.txt', text: 'aios trial' } : {};
    const r = await call(e, `${fn.id} (${fn.permission_level})`, fn.id, args, { confirm_timeout_ms: answeringBy ? 30_000 : 120_000 });
    const out = r.outcome;
    const asked = r.timeline.some((t) => t.state === 'awaiting_confirmation') || out?.confirmation?.required === true;
    if (!asked || out?.confirmation?.decided_by !== 'user') {
      return { verdict: 'fail', message: `the prompt never came: the call ended ${out?.state}/${out?.error?.type ?? '-'} with confirmation ${JSON.stringify(out?.confirmation ?? null)} (a high-risk call must be confirmed by the user)` };
    }
    if (out.state !== 'completed') return { verdict: 'fail', message: `the user was asked, but the call ended ${out.state}/${out.error?.type ?? '-'}${answeringBy ? '' : ' (was the prompt allowed?)'}` };
    // An answer the trial gave itself shows the prompt works, not that a person confirms: simulated, never pass.
    if (answeringBy) return { verdict: 'simulated', message: `the prompt came and was ${out.confirmation.decision}: answered by the trial, not a person (attached through ${answeringBy === 'attach' ? 'control.prompts.attach' : 'the control connection'}: --unattended)` };
    return { verdict: 'pass', message: `asked and ${out.confirmation.decision} by the user` };
  });

  // Also: duplicate, cancel, reconnect, outdated, several devices.
  await check('extra.duplicate', 'A duplicate call_id is replayed with the first outcome and runs once', 'extra', true, async (e) => {
    if (!online) return notOnline;
    const fn = functions.find((f) => f.id === 'diagnostics.echo') ?? functions.find((f) => f.id === 'device.info');
    if (!fn) return { verdict: 'not_run', message: 'no idempotent function to repeat (device.info or diagnostics.echo)' };
    const id = `aios-trial-dup-${randomUUID()}`;
    const args = fn.id === 'diagnostics.echo' ? { value: id } : {};
    const a = await call(e, 'first', fn.id, args, { call_id: id });
    const b = await call(e, 'same call_id again', fn.id, args, { call_id: id });
    if (!b.outcome?.replayed) return { verdict: 'fail', message: 'the second call was not marked replayed' };
    if (a.outcome?.started_at !== b.outcome.started_at || JSON.stringify(a.outcome?.output) !== JSON.stringify(b.outcome.output)) return { verdict: 'fail', message: 'the replay differs from the first outcome: the function ran twice' };
    return { verdict: 'pass', message: 'replayed: true, same outcome, same start time (ran once)' };
  });
  await check('extra.cancel', 'A call cancelled while running ends cancelled', 'extra', true, async (e) => {
    if (!online) return notOnline;
    if (!wait) return noWait;
    const first = await call(e, 'start diagnostics.wait 20000 ms', 'diagnostics.wait', { ms: 20_000 }, { wait: false });
    await ev(e, 'wait until running', null, () => waitState(client, first.call_id, 'running', 30_000));
    const c = await ev(e, 'POST cancel', { call_id: first.call_id }, () => client.cancel(first.call_id, 'aios trial'));
    const fin = c.outcome ? c : await client.waitTerminal(first.call_id, 30_000);
    if (fin.outcome?.state === 'cancelled') return { verdict: 'pass', message: `cancelled after ${fin.outcome.duration_ms ?? '?'} ms` };
    return { verdict: 'fail', message: `expected cancelled, got ${fin.outcome?.state ?? fin.state}` };
  });
  await check('extra.reconnect', 'A link cut mid-call: the outcome is delivered after reconnect', 'extra', false, async (e) => {
    if (!online) return notOnline;
    if (!control) return { verdict: 'not_run', message: controlProblem };
    if (!wait) return noWait;
    if (!(await control.has('control.session.reconnect', { dry_run: true }))) return { verdict: 'not_run', message: 'the agent offers no control.session.reconnect to cut its link' };
    const first = await call(e, 'start diagnostics.wait 1500 ms', 'diagnostics.wait', { ms: 1500 }, { wait: false });
    await ev(e, 'wait until running', null, () => waitState(client, first.call_id, 'running', 30_000));
    await ev(e, 'cut the link (control.session.reconnect)', {}, () => control!.call('control.session.reconnect'));
    const fin = await ev(e, 'wait for the outcome', null, () => client.waitTerminal(first.call_id, 60_000));
    if (fin.outcome?.state === 'completed') return { verdict: 'pass', message: 'completed; the outcome arrived after the link came back' };
    return { verdict: 'fail', message: `expected completed after reconnect, got ${fin.outcome?.state ?? fin.state}` };
  });
  await check('extra.client_outdated', 'An outdated client is told client_outdated, not left offline', 'extra', false, async () => {
    const refused = device?.['last_refused_hello'] as { type?: string } | null | undefined;
    if (refused?.type === 'client_outdated') return { verdict: 'pass', message: 'the bridge refused the device\'s hello with client_outdated and says so in the device record' };
    return { verdict: 'not_run', message: 'needs a bridge restarted with a higher min_client_version (not in the trial\'s control); client.version reports an outdated device when the bridge has refused one' };
  });
  await check('extra.multi_device', 'Several devices of one user are addressed separately, with no cross-talk', 'extra', o.devices.length > 1, async (e) => {
    if (o.devices.length < 2) return { verdict: 'not_run', message: 'one --device given; give --device twice to check two devices of one user' };
    const seen: string[] = [];
    for (const id of o.devices) {
      const r = await ev(e, `device.info on ${id}`, { device_id: id }, async () => (await client.call('device.info', {}, { device_id: id })).record);
      const out = r.outcome?.output as Record<string, unknown> | undefined;
      const said = (out?.['device'] as Record<string, unknown> | undefined)?.['id'] ?? out?.['device_id'];
      if (r.outcome?.state !== 'completed') return { verdict: 'fail', message: `device.info on ${id} ended ${r.outcome?.state}/${r.outcome?.error?.type}` };
      if (said !== undefined && said !== id) return { verdict: 'fail', message: `a call addressed to ${id} was answered by ${String(said)}` };
      seen.push(String(said ?? id));
    }
    return { verdict: 'pass', message: `each device answered for itself: ${seen.join(', ')}` };
  });

  if (scratch && control) await unshareScratch(control, scratch).catch(() => undefined);
  control?.close();

  const finished = new Date().toISOString();
  const allowed = o.allowNotRun ?? [];
  const requiredFailed = checks.filter((c) => c.required && failsRun(c.verdict, allowed.some((p) => matches(c.id, p)))).map((c) => c.id);
  const count = (v: Verdict) => checks.filter((c) => c.verdict === v).length;
  return {
    tool: { name: 'aios-device trial', version: APP_VERSION, protocol_version: PROTOCOL_VERSION },
    started_at: started,
    finished_at: finished,
    bridge: o.bridge,
    devices: o.devices,
    environment: { platform: process.platform, arch: process.arch, node: process.version, bridge_min_client_version: minClient ?? null, clients: clients.map((c) => pick(c, ['device_id', 'name', 'platform', 'arch', 'client_version', 'protocol_version', 'online', 'last_refused_hello'])) },
    options: { only: o.only ?? [], skip: o.skip ?? [], unattended: !!o.unattended, allow_effects: !!o.allowEffects, control: o.control ?? 'none', allow_not_run: allowed, prompts_answered_by_trial: answeringBy ? (control?.answered.length ?? 0) : 0 },
    summary: { ...(Object.fromEntries(VERDICTS.map((v) => [v, count(v)])) as Record<Verdict, number>), required_failed: requiredFailed },
    ok: requiredFailed.length === 0 && checks.length > 0,
    lines: lineResults(checks),
    checks,
  };
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
    return { line, verdict: weakest((req.length ? req : cs).map((c) => c.verdict)), checks: cs.map((c) => c.id) };
  });
}

/** The files grants in a `control.grants.list` answer, whichever of the two natural shapes it has. */
function filesGrants(g: Record<string, unknown>): Record<string, unknown>[] {
  const list = g['grants'];
  if (Array.isArray(list)) return (list as Record<string, unknown>[]).filter((x) => x['kind'] === 'files');
  const byKind = (list ?? g) as Record<string, unknown>;
  return Array.isArray(byKind['files']) ? (byKind['files'] as Record<string, unknown>[]) : [];
}

/** Arguments pointed at the scratch share where the function takes a root (files.*). */
function scratchArgs(f: Descriptor, valid: Record<string, unknown>, scratch: { root: string } | undefined): Record<string, unknown> {
  if (!scratch || !f.id.startsWith('files.')) return valid;
  const props = (f.input_schema as { properties?: Record<string, unknown> }).properties ?? {};
  const out = { ...valid };
  if ('root' in props) out['root'] = scratch.root;
  for (const k of ['path', 'from', 'to', 'destination']) if (k in out && typeof out[k] === 'string') out[k] = `trial-${k}.txt`;
  return out;
}

/**
 * A scratch folder the run creates and shares, and removes at the end: inside a folder the user already
 * shares for writing when there is one (a narrower grant is always allowed), else a new temporary folder
 * (allowed where the administrator set no ceiling for files).
 */
async function shareScratch(control: LocalControl): Promise<{ dir: string; root: string }> {
  const listed = await control.call('control.grants.list', { kind: 'files' });
  const writable = filesGrants(listed).find((g) => g['access'] === 'read_write' && typeof g['id'] === 'string' && existsSync(g['id']));
  const dir = mkdtempSync(join(writable ? (writable['id'] as string) : tmpdir(), 'aios-trial-scratch-'));
  const root = `aios-trial-${randomUUID().slice(0, 8)}`;
  try {
    await control.call('control.grants.add', { kind: 'files', entry: { path: dir, access: 'read_write', name: root } });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  writeFileSync(join(dir, 'trial-path.txt'), 'aios trial\n');
  return { dir, root };
}

async function unshareScratch(control: LocalControl, s: { dir: string; root: string }): Promise<void> {
  try {
    await control.call('control.grants.remove', { kind: 'files', id: s.root });
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
}

async function waitState(client: RuntimeClient, callId: string, state: string, ms: number): Promise<CallRecord> {
  const end = Date.now() + ms;
  for (;;) {
    const r = await client.getCall(callId);
    if (r.state === state || r.timeline.some((t) => t.state === state) || r.outcome) return r;
    if (Date.now() > end) throw new Error(`the call did not reach ${state} in ${ms} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** A URL on a loopback port nothing listens on (bound, then released). */
async function closedPortUrl(): Promise<string> {
  const { createServer } = await import('node:net');
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

function run(cmd: string, args: string[], ms: number): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const t = setTimeout(() => c.kill('SIGKILL'), ms);
    c.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, out, err });
    });
  });
}

function firstLine(s: string): string {
  return s.trim().split('\n')[0]?.slice(0, 300) ?? '';
}

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]]));
}

/** One sentence for a failure the trial itself met (the bridge down, a refused request). */
export function describeError(e: unknown, bridge: string): string {
  if (e instanceof BridgeHttpError) return `the bridge answered HTTP ${e.status} ${e.error.type}: ${e.error.message}`;
  if (e instanceof BridgeUnreachableError) return e.message;
  const m = e instanceof Error ? e.message : String(e);
  return m === 'fetch failed' ? `cannot reach the bridge at ${bridge}` : m;
}

export type { Outcome };
