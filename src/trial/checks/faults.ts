/** Guide line 5: network loss, device offline, permission denied and timeouts surface as visible errors. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { BridgeHttpError } from '../../runtime-client/client.js';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import { waitState, type Observed, type TrialContext } from '../context.js';
import type { Trace } from '../types.js';
import { m, TrialError } from '../say.js';
import { findRunningAgent } from '../../endpoint/local-client.js';
import { strings } from '../../i18n/index.js';

/** Why the checks that need a function taking time cannot run. */
export const NO_WAIT: Observed = { verdict: 'not_run', message: m('trial.m.no_wait') };

export const faultsChecks = (): CheckDef[] => [
  {
    id: 'faults.device_offline',
    title: m('trial.t.device_offline'),
    guide: '5',
    required: true,
    needs: ONLINE,
    run: (ctx, e, device) => (ctx.control ? takeOffline(ctx, e, device) : offlineWithoutControl(ctx, e)),
  },
  {
    id: 'faults.bridge_unreachable',
    title: m('trial.t.bridge_unreachable'),
    guide: '5',
    required: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      // The device side, for real: its link taken down, its own status must say the bridge is not connected.
      if (ctx.control && ctx.o.agentDataDir) return deviceSeesBridgeDown(ctx, e, device, ctx.o.agentDataDir);
      const cli = ctx.o.cli;
      if (!cli) return { verdict: 'not_run', message: m('trial.m.offline.needs_control', { problem: ctx.controlProblem }) };
      // Without control the trial cannot take the bridge away from the device: the runtime side's CLI against
      // a closed port stands in (simulated), which shows the CLI's error, not the device's.
      const stand = await cliAgainstClosedPort(ctx, e, device, cli);
      if (stand.verdict !== 'pass') return stand;
      return { verdict: 'simulated', message: m('trial.m.unreachable.simulated', { seen: stand.message, problem: ctx.controlProblem }) };
    },
  },
  {
    id: 'faults.timeout',
    title: m('trial.t.timeout'),
    guide: '5',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      if (!(await ctx.functions(device)).some((f) => f.id === 'diagnostics.wait')) return NO_WAIT;
      const r = await ctx.call(e, m('trial.e.timeout_call'), device, 'diagnostics.wait', { ms: 5000 }, { timeout_ms: 300 });
      const out = r.outcome;
      if (out?.state === 'failed' && out.error?.type === 'timeout') {
        // A visible error is also a true one: it names the budget this call had, not the function's default.
        if (/\d+ ms/.test(out.error.message) && !out.error.message.includes('300 ms')) return { verdict: 'fail', message: m('trial.m.timeout.other_budget', { message: out.error.message }) };
        return { verdict: 'pass', message: m('trial.m.timeout.ok', { message: out.error.message }) };
      }
      return { verdict: 'fail', message: m('trial.m.timeout.not', { got: `${out?.state ?? r.state}/${out?.error?.type ?? '-'}` }) };
    },
  },
];

/** How long the trial keeps the device's link down. */
const OFFLINE_S = 4;

/**
 * With control: a call in flight, then the device's link taken down (`control.session.offline`); a call
 * while it is down must be refused 409 device_offline; the call in flight ends (protocol 1.2: `unknown`, or
 * its real outcome once the device is back: either is evidence); the device comes back.
 */
async function takeOffline(ctx: TrialContext, e: Trace[], device: string): Promise<Observed> {
  const control = ctx.control!;
  if (!(await control.has('takeSessionOffline', { dry_run: true }))) return { verdict: 'not_run', message: m('trial.m.no_offline_method') };
  const hasWait = (await ctx.functions(device)).some((f) => f.id === 'diagnostics.wait');
  const inFlight = hasWait ? await ctx.call(e, m('trial.e.in_flight'), device, 'diagnostics.wait', { ms: 1000 }, { wait: false }) : undefined;
  if (inFlight) await ctx.ev(e, m('trial.e.until_running'), null, () => waitState(ctx.client, inFlight.call_id, 'running', 30_000));
  let observed: Observed;
  await linkDown(ctx, e);
  try {
    await ctx.ev(e, m('trial.e.bridge_sees_offline'), null, () => waitOnline(ctx, device, false, 20_000));
    try {
      const r = await ctx.ev(e, m('trial.e.call_offline'), { device_id: device, function: 'device.info' }, async () => (await ctx.client.call('device.info', {}, { device_id: device, wait: false })).record);
      observed = { verdict: 'fail', message: m('trial.m.offline.accepted', { state: r.state }) };
    } catch (x) {
      if (!(x instanceof BridgeHttpError)) throw x;
      observed = x.error.type === 'device_offline' && x.status === 409 ? { verdict: 'pass', message: m('trial.m.offline.ok', { message: x.error.message }) } : { verdict: 'fail', message: m('trial.m.offline.wrong', { status: x.status, type: x.error.type }) };
    }
  } finally {
    await comeBack(ctx, e, device);
  }
  if (inFlight) {
    const fin = await ctx.ev(e, m('trial.e.in_flight_ends'), null, () => ctx.client.waitTerminal(inFlight.call_id, 60_000)).catch(() => undefined);
    const note = fin?.outcome ? m('trial.m.offline.in_flight_ended', { ended: `${fin.outcome.state}${fin.outcome.error ? '/' + fin.outcome.error.type : ''}` }) : m('trial.m.offline.in_flight_open');
    const event = fin?.timeline.some((t) => t.event === 'device_offline') ? m('trial.m.offline.event') : '';
    observed = { ...observed, message: m('trial.m.offline.with_flight', { observed: observed.message, note, event }) };
  }
  return observed;
}

/** Takes the device's link down for `seconds` (`control.session.offline`). */
async function linkDown(ctx: TrialContext, e: Trace[], seconds = OFFLINE_S): Promise<void> {
  await ctx.ev(e, m('trial.e.link_down', { seconds }), { seconds }, () => ctx.control!.api.takeSessionOffline({ seconds }));
}



/** Waits for the device to be back (later checks need it); a device that does not come back shows in the evidence. */
async function comeBack(ctx: TrialContext, e: Trace[], device: string, seconds = OFFLINE_S): Promise<void> {
  await ctx.ev(e, m('trial.e.back'), null, () => waitOnline(ctx, device, true, 60_000 + seconds * 1000)).catch(() => undefined);
}

/**
 * With control: the device's link taken down, the device's own status (its local endpoint's `/health`,
 * what `aios-device status` and the tray show) must say the bridge is not connected while the link is down.
 */
async function deviceSeesBridgeDown(ctx: TrialContext, e: Trace[], device: string, dataDir: string): Promise<Observed> {
  if (!(await ctx.control!.has('takeSessionOffline', { dry_run: true }))) return { verdict: 'not_run', message: m('trial.m.no_offline_method') };
  await linkDown(ctx, e);
  try {
    await ctx.ev(e, m('trial.e.bridge_sees_offline'), null, () => waitOnline(ctx, device, false, 20_000));
    const agent = await ctx.ev(e, m('trial.e.status_while_down'), { data_dir: dataDir }, async () => (await findRunningAgent(dataDir))?.health ?? null);
    // A status read after the link came back proves nothing either way.
    const stillDown = (await ctx.client.device(device))['online'] !== true;
    const state = agent?.['bridge'];
    if (typeof state !== 'string') return { verdict: 'fail', message: m('trial.m.unreachable.no_state') };
    if (state === 'connected') return stillDown ? { verdict: 'fail', message: m('trial.m.unreachable.still_connected') } : { verdict: 'inconclusive', message: m('trial.m.unreachable.too_late', { seconds: OFFLINE_S }) };
    const key = `cli.status.bridge.${state}`;
    const line = { key: 'cli.status.bridge_connection', params: { state: strings.has(key) ? { key } : state } };
    return { verdict: 'pass', message: m('trial.m.unreachable.ok', { state, line }) };
  } finally {
    await comeBack(ctx, e, device);
  }
}

/** `aios-device invoke` against a closed port: exits non-zero with one clear line naming the address. */
async function cliAgainstClosedPort(ctx: TrialContext, e: Trace[], device: string, cli: { node: string; args: string[] }): Promise<Observed> {
  const dead = await closedPortUrl();
  const tmp = mkdtempSync(join(tmpdir(), 'aios-trial-'));
  try {
    const prof = join(tmp, 'runtime.json');
    writeFileSync(prof, JSON.stringify({ bridge_url: dead, token: 'x', workspace_id: ctx.o.workspace, device_id: device }), { mode: 0o600 });
    const r = await run(cli.node, [...cli.args, 'invoke', 'device.info', '--runtime', prof], 60_000);
    e.push({ label: m('trial.e.closed_port'), request: { url: dead, argv: ['invoke', 'device.info'] }, response: { exit: r.code, stderr: r.err.slice(0, 2000), stdout: r.out.slice(0, 2000) } });
    const text = r.err + r.out;
    if (r.code === 0) return { verdict: 'fail', message: m('trial.m.unreachable.exit0') };
    if (!text.includes(new URL(dead).host)) return { verdict: 'fail', message: m('trial.m.unreachable.no_address', { line: firstLine(text) }) };
    if (/^\s*$/.test(text) || /TypeError|at .*\.(ts|js):\d+/.test(text)) return { verdict: 'fail', message: m('trial.m.unreachable.unclear', { line: firstLine(text) }) };
    return { verdict: 'pass', message: m('trial.m.unreachable.cli', { code: String(r.code), line: firstLine(text) }) };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Without control the trial cannot take the device down: another device of the workspace that is offline stands in (simulated), else not run. */
async function offlineWithoutControl(ctx: TrialContext, e: Trace[]): Promise<Observed> {
  const list = await ctx.ev(e, m('trial.e.get', { path: '/v1/devices' }), null, () => ctx.client.devices());
  const offline = list.devices.find((d) => d['online'] === false && !ctx.o.devices.includes(String(d['device_id'])));
  const why = m('trial.m.offline.needs_control', { problem: ctx.controlProblem });
  if (!offline) return { verdict: 'not_run', message: m('trial.m.offline.none', { why }) };
  const target = String(offline['device_id']);
  try {
    const r = await ctx.ev(e, m('trial.e.call_other_offline'), { device_id: target, function: 'device.info' }, async () => (await ctx.client.call('device.info', {}, { device_id: target, wait: false })).record);
    return { verdict: 'fail', message: m('trial.m.offline.other_accepted', { state: r.state }) };
  } catch (x) {
    if (!(x instanceof BridgeHttpError)) throw x;
    if (x.error.type === 'device_offline') return { verdict: 'simulated', message: m('trial.m.offline.stood_in', { target, status: x.status, why }) };
    return { verdict: 'fail', message: m('trial.m.offline.other_wrong', { target, status: x.status, type: x.error.type }) };
  }
}

/** Polls the bridge until the device is (or is not) online. */
async function waitOnline(ctx: TrialContext, device: string, online: boolean, ms: number): Promise<Record<string, unknown>> {
  const end = Date.now() + ms;
  for (;;) {
    const d = await ctx.client.device(device);
    if ((d['online'] === true) === online) return { device_id: device, online: d['online'] };
    if (Date.now() > end) throw new TrialError(m(online ? 'trial.m.not_back' : 'trial.m.not_offline', { ms }));
    await new Promise((r) => setTimeout(r, 100));
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
