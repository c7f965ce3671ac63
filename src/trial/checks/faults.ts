/** Guide line 5: network loss, device offline, permission denied and timeouts surface as visible errors. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { BridgeHttpError } from '../../cli/runtime-client.js';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import { waitState, type Observed, type TrialContext } from '../context.js';
import type { Evidence } from '../types.js';

/** Why the checks that need a function taking time cannot run. */
export const NO_WAIT: Observed = { verdict: 'not_run', message: 'needs a function that takes time: enable diagnostics on the device (handlers.diagnostics.enabled: true) for diagnostics.wait' };

export const faultsChecks = (): CheckDef[] => [
  {
    id: 'faults.device_offline',
    title: 'A call to a device that is offline is refused with a visible, typed error (409 device_offline)',
    guide: '5',
    required: true,
    needs: ONLINE,
    run: (ctx, e, device) => (ctx.control ? takeOffline(ctx, e, device) : offlineWithoutControl(ctx, e)),
  },
  {
    id: 'faults.bridge_unreachable',
    title: 'With the bridge unreachable, the CLI says so clearly, names the URL and exits non-zero',
    guide: '5',
    required: true,
    async run(ctx, e, device) {
      const cli = ctx.o.cli;
      if (!cli) return { verdict: 'not_run', message: 'no CLI to run' };
      const dead = await closedPortUrl();
      const tmp = mkdtempSync(join(tmpdir(), 'aios-trial-'));
      try {
        const prof = join(tmp, 'runtime.json');
        writeFileSync(prof, JSON.stringify({ bridge_url: dead, token: 'x', workspace_id: ctx.o.workspace, device_id: device }), { mode: 0o600 });
        const r = await run(cli.node, [...cli.args, 'invoke', 'device.info', '--runtime', prof], 60_000);
        e.push({ label: 'aios-device invoke against a closed port', request: { url: dead, argv: ['invoke', 'device.info'] }, response: { exit: r.code, stderr: r.err.slice(0, 2000), stdout: r.out.slice(0, 2000) } });
        const text = r.err + r.out;
        if (r.code === 0) return { verdict: 'fail', message: 'invoke exited 0 with the bridge down' };
        if (!text.includes(new URL(dead).host)) return { verdict: 'fail', message: `the error does not name the bridge's address: ${firstLine(text)}` };
        if (/^\s*$/.test(text) || /TypeError|at .*\.(ts|js):\d+/.test(text)) return { verdict: 'fail', message: `the error is not a clear message: ${firstLine(text)}` };
        return { verdict: 'pass', message: `exit ${r.code}: ${firstLine(text)}` };
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    },
  },
  {
    id: 'faults.timeout',
    title: 'A call that runs past its timeout ends failed/timeout',
    guide: '5',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      if (!(await ctx.functions(device)).some((f) => f.id === 'diagnostics.wait')) return NO_WAIT;
      const r = await ctx.call(e, 'diagnostics.wait 5000 ms with timeout_ms 300', device, 'diagnostics.wait', { ms: 5000 }, { timeout_ms: 300 });
      const out = r.outcome;
      if (out?.state === 'failed' && out.error?.type === 'timeout') {
        // A visible error is also a true one: it names the budget this call had, not the function's default.
        if (/\d+ ms/.test(out.error.message) && !out.error.message.includes('300 ms')) return { verdict: 'fail', message: `failed/timeout, but the message names another budget than the call's 300 ms: ${out.error.message}` };
        return { verdict: 'pass', message: `failed/timeout: ${out.error.message}` };
      }
      return { verdict: 'fail', message: `expected failed/timeout, got ${out?.state ?? r.state}/${out?.error?.type ?? '-'}` };
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
async function takeOffline(ctx: TrialContext, e: Evidence[], device: string): Promise<Observed> {
  const control = ctx.control!;
  if (!(await control.has('control.session.offline', { dry_run: true }))) return { verdict: 'not_run', message: 'the agent offers no control.session.offline to take its link down (update AIOS Device on the device)' };
  const hasWait = (await ctx.functions(device)).some((f) => f.id === 'diagnostics.wait');
  const inFlight = hasWait ? await ctx.call(e, 'a call in flight: diagnostics.wait 1000 ms', device, 'diagnostics.wait', { ms: 1000 }, { wait: false }) : undefined;
  if (inFlight) await ctx.ev(e, 'wait until it runs', null, () => waitState(ctx.client, inFlight.call_id, 'running', 30_000));
  await ctx.ev(e, `take the link down for ${OFFLINE_S} s (control.session.offline)`, { seconds: OFFLINE_S }, () => control.call('control.session.offline', { seconds: OFFLINE_S }));
  let observed: Observed;
  try {
    await ctx.ev(e, 'the bridge sees the device offline', null, () => waitOnline(ctx, device, false, 20_000));
    try {
      const r = await ctx.ev(e, 'call the offline device', { device_id: device, function: 'device.info' }, async () => (await ctx.client.call('device.info', {}, { device_id: device, wait: false })).record);
      observed = { verdict: 'fail', message: `the bridge accepted a call to the offline device (${r.state}) instead of refusing it with device_offline` };
    } catch (x) {
      if (!(x instanceof BridgeHttpError)) throw x;
      observed = x.error.type === 'device_offline' && x.status === 409 ? { verdict: 'pass', message: `HTTP 409 device_offline while the link was down: ${x.error.message}` } : { verdict: 'fail', message: `expected HTTP 409 device_offline, got HTTP ${x.status} ${x.error.type}` };
    }
  } finally {
    await ctx.ev(e, 'the device comes back', null, () => waitOnline(ctx, device, true, 60_000 + OFFLINE_S * 1000)).catch(() => undefined);
  }
  if (inFlight) {
    const fin = await ctx.ev(e, 'the call in flight ends', null, () => ctx.client.waitTerminal(inFlight.call_id, 60_000)).catch(() => undefined);
    const note = fin?.outcome ? `; the call in flight ended ${fin.outcome.state}${fin.outcome.error ? '/' + fin.outcome.error.type : ''}` : '; the call in flight had not ended';
    const event = fin?.timeline.some((t) => t.event === 'device_offline') ? ' (its timeline records device_offline)' : '';
    observed = { ...observed, message: observed.message + note + event };
  }
  return observed;
}

/** Without control the trial cannot take the device down: another device of the workspace that is offline stands in (simulated), else not run. */
async function offlineWithoutControl(ctx: TrialContext, e: Evidence[]): Promise<Observed> {
  const list = await ctx.ev(e, 'GET /v1/devices', null, () => ctx.client.devices());
  const offline = list.devices.find((d) => d['online'] === false && !ctx.o.devices.includes(String(d['device_id'])));
  const why = `taking the device's link down needs --control local: ${ctx.controlProblem}`;
  if (!offline) return { verdict: 'not_run', message: `no offline device in the workspace to address; ${why}` };
  const target = String(offline['device_id']);
  try {
    const r = await ctx.ev(e, 'call another device that is offline', { device_id: target, function: 'device.info' }, async () => (await ctx.client.call('device.info', {}, { device_id: target, wait: false })).record);
    return { verdict: 'fail', message: `the bridge accepted a call to an offline device (${r.state})` };
  } catch (x) {
    if (!(x instanceof BridgeHttpError)) throw x;
    if (x.error.type === 'device_offline') return { verdict: 'simulated', message: `another device of the workspace (${target}) stood in: HTTP ${x.status} device_offline; ${why}` };
    return { verdict: 'fail', message: `expected device_offline for the offline device ${target}, got HTTP ${x.status} ${x.error.type}` };
  }
}

/** Polls the bridge until the device is (or is not) online. */
async function waitOnline(ctx: TrialContext, device: string, online: boolean, ms: number): Promise<Record<string, unknown>> {
  const end = Date.now() + ms;
  for (;;) {
    const d = await ctx.client.device(device);
    if ((d['online'] === true) === online) return { device_id: device, online: d['online'] };
    if (Date.now() > end) throw new Error(`the device was not ${online ? 'back online' : 'offline'} within ${ms} ms`);
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
