/** Guide line 5: network loss, device offline, permission denied and timeouts surface as visible errors. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { BridgeHttpError } from '../../cli/runtime-client.js';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import type { Observed } from '../context.js';

/** Why the checks that need a function taking time cannot run. */
export const NO_WAIT: Observed = { verdict: 'not_run', message: 'needs a function that takes time: enable diagnostics on the device (handlers.diagnostics.enabled: true) for diagnostics.wait' };

export const faultsChecks = (): CheckDef[] => [
  {
    id: 'faults.device_offline',
    title: 'A call to a device that is not connected is refused with a visible, typed error (device_offline)',
    guide: '5',
    required: true,
    async run(ctx, e) {
      // A device of the workspace the bridge knows but that is offline gives the real thing (409 device_offline);
      // with none, an id the bridge does not know must still be a typed refusal, never a hang.
      const list = await ctx.ev(e, 'GET /v1/devices', null, () => ctx.client.devices());
      const offline = list.devices.find((d) => d['online'] === false && !ctx.o.devices.includes(String(d['device_id'])));
      const target = offline ? String(offline['device_id']) : `dev_aios_trial_offline_${randomUUID().slice(0, 8)}`;
      try {
        const r = await ctx.ev(e, `call ${offline ? 'an offline' : 'an unknown'} device`, { device_id: target, function: 'device.info' }, async () => (await ctx.client.call('device.info', {}, { device_id: target, wait: false })).record);
        return { verdict: 'fail', message: `the bridge accepted a call to a device that is not connected (${r.state})` };
      } catch (x) {
        if (!(x instanceof BridgeHttpError)) throw x;
        if (x.error.type === 'device_offline') return { verdict: 'pass', message: `HTTP ${x.status} device_offline: ${x.error.message}` };
        // A 404 for a made-up id says nothing about an offline device: never a pass (issue #30).
        if (!offline && x.status === 404) return { verdict: 'not_run', message: `no offline device in the workspace to address (an unknown device was refused: HTTP 404 ${x.error.type}); taking a device's link down needs --control local` };
        return { verdict: 'fail', message: `expected device_offline, got HTTP ${x.status} ${x.error.type}` };
      }
    },
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
