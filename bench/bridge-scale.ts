/**
 * The reference bridge at scale (issue 21): N simulated devices (real WebSocket clients, one device token
 * each from the bridge's `device_tokens`, each hello carrying its own signed Adapter Card of real size,
 * heartbeats, answering invokes) in a few worker processes, against the bridge in its own process.
 *
 * Figures: the bridge's RSS above its idle RSS per connected device; after the bridge is killed and started
 * again on the same port, the time until every device is back (the agent's backoff with full jitter), and
 * whether calls to 100 random devices made during that storm complete (a runtime retries `device_offline`).
 *
 * Run: npm run bench:scale [-- --devices N] [--workers W] [--calls C] [--concurrency K] [--no-restart] [--json]
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { benchFile, isMain, loaderFor, positiveInt, runMain, startChild, type BenchChild } from './child.js';
import type { WorkerCommand, WorkerReport } from './bridge-scale-worker.js';

const IDS = { workspace_id: 'ws_scale', user_id: 'usr_scale' } as const;

/** What one run measured. */
export interface ScaleReport {
  devices: number;
  workers: number;
  nofile_limit: { bridge: number | null; needed: number };
  card_bytes: number;
  bridge_idle_rss_kb: number;
  bridge_loaded_rss_kb: number;
  rss_per_device_bytes: number;
  connect_all_ms: number;
  /** The bridge's CPU time per device hello (upgrade, hello, card, function list): what bounds a storm on a busy machine. */
  bridge_cpu_ms_per_connect: number;
  /** `reconnect_all_ms`: from the restarted bridge being ready until every device is back; `since_kill_ms` counts the bridge's own start too. */
  restart?: { bridge_restart_ms: number; reconnect_all_ms: number | null; reconnected: number; since_kill_ms: number | null; bridge_cpu_ms_per_reconnect: number; calls: number; calls_completed: number; slowest_call_ms: number; retries: number };
}

/** Resident set size of a process, in kB. */
function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}

/** CPU time a process has used (user + system), in ms. */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // clock ticks of 10 ms
}

/** The soft open-files limit of a process. */
function nofile(pid: number): number | null {
  const m = /Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  return m ? Number(m[1]) : null;
}

/** Raises a process's open-files limit to `n` with prlimit (root, or within the hard limit); returns the limit it has. */
function raiseNofile(pid: number, n: number): number | null {
  const cur = nofile(pid);
  if (cur !== null && cur >= n) return cur;
  spawnSync('prlimit', ['--pid', String(pid), `--nofile=${n}:${n}`], { stdio: 'ignore' });
  return nofile(pid);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Options of one run. */
export interface ScaleOptions {
  devices: number;
  workers: number;
  calls: number;
  concurrency: number;
  restart: boolean;
  /** How long to wait for every device to come back after the restart (120 s by default). */
  reconnectLimitMs?: number;
  progress?: (line: string) => void;
}

/** Runs the scale benchmark and returns its figures. */
export async function runScale(o: ScaleOptions): Promise<ScaleReport> {
  const say = o.progress ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'aios-scale-'));
  const runtime = 'rt_' + randomBytes(12).toString('hex');
  const devices = Array.from({ length: o.devices }, (_, i) => ({ token: `dt_${i}_${randomBytes(12).toString('hex')}`, device_id: `dev_${String(i).padStart(6, '0')}` }));
  const cfgFile = join(dir, 'bridge-config.json');
  const writeConfig = (port: number) =>
    writeFileSync(cfgFile, JSON.stringify({
      listen: { host: '127.0.0.1', port },
      data_dir: join(dir, 'bridge'),
      runtime_tokens: { [runtime]: { workspace_id: IDS.workspace_id } },
      device_tokens: Object.fromEntries(devices.map((d) => [d.token, { ...IDS, device_id: d.device_id }])),
      runtime_rate_limit: { per_second: 1e9, burst: 1e9 },
    }), { mode: 0o600 });
  const needed = o.devices + 1024;
  let bridge: BenchChild<{ url: string }> | undefined;
  const workers: ChildProcess[] = [];
  const startBridge = async () => {
    const b = await startChild<{ url: string }>(benchFile('bridge-child'), ['@' + cfgFile]);
    raiseNofile(b.proc.pid!, needed);
    return b;
  };
  try {
    writeConfig(0);
    say(`starting the bridge with ${o.devices} device tokens`);
    bridge = await startBridge();
    const url = bridge.info.url;
    const port = Number(new URL(url).port);
    writeConfig(port);
    await sleep(1000);
    const idle = rssKb(bridge.proc.pid!);
    const limit = nofile(bridge.proc.pid!);
    if (limit !== null && limit < needed) say(`the bridge may open ${limit} files; ${needed} are needed: some devices will be refused`);

    // Workers, each with a share of the devices.
    const reports = new Map<ChildProcess, WorkerReport>();
    let cardBytes = 0;
    // A worker starts connecting as soon as its cards are signed, so the connect clock starts at the first one's.
    let firstCardsAt: number | null = null;
    const per = Math.ceil(o.devices / o.workers);
    const file = benchFile('bridge-scale-worker');
    for (let w = 0; w < o.workers; w++) {
      const share = devices.slice(w * per, (w + 1) * per);
      if (!share.length) break;
      const child = fork(file, [], { execArgv: loaderFor(file), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      raiseNofile(child.pid!, share.length + 1024);
      child.on('message', (m: WorkerReport) => {
        if (m.type === 'cards') {
          cardBytes = m.bytes;
          firstCardsAt ??= performance.now();
        }
        else if (m.type === 'error') say(`worker: ${m.message}`);
        reports.set(child, m);
      });
      workers.push(child);
      child.send({ cmd: 'start', url: url.replace(/^http/, 'ws') + '/v1/device', devices: share, ...IDS, concurrency: Math.ceil(o.concurrency / o.workers) } satisfies WorkerCommand);
    }
    const online = async (since: number): Promise<number> => {
      let sum = 0;
      await Promise.all(workers.map((w) => new Promise<void>((resolve) => {
        const on = (m: WorkerReport) => {
          if (m.type !== 'count') return;
          w.off('message', on);
          sum += m.online;
          resolve();
        };
        w.on('message', on);
        w.send({ cmd: 'count', since } satisfies WorkerCommand);
      })));
      return sum;
    };
    /**
     * Waits until every device has a session that began at or after `since`; returns when that was seen
     * (null if `limitMs` passed first) and how many were online then.
     */
    const waitAll = async (what: string, since: number, limitMs: number): Promise<{ at: number | null; n: number }> => {
      const t0 = Date.now();
      let last = -1;
      for (;;) {
        const n = await online(since);
        if (n !== last && (n - last >= o.devices / 20 || n >= o.devices)) {
          say(`${what}: ${n}/${o.devices} online after ${Date.now() - t0} ms`);
          last = n;
        }
        if (n >= o.devices) return { at: Date.now(), n };
        if (Date.now() - t0 > limitMs) return { at: null, n };
        await sleep(250);
      }
    };
    say(`signing ${o.devices} Adapter Cards in ${workers.length} worker processes`);
    // Connecting starts once a worker has signed its cards: the clock started when the first one had.
    while (workers.some((w) => !reports.has(w))) await sleep(100);
    say(`connecting ${o.devices} devices`);
    const t0 = Date.now();
    const connectFrom = firstCardsAt ?? performance.now();
    const cpu0 = cpuMs(bridge.proc.pid!);
    const first = await waitAll('connect', 0, Math.max(120_000, o.devices * 60));
    if (first.at === null) throw new Error(`only ${first.n} of ${o.devices} devices connected`);
    // Measured on the monotonic clock, to a tenth of a millisecond: a small N can connect within one Date.now() tick.
    const connectMs = Math.round((performance.now() - connectFrom) * 10) / 10;
    // Each device's hello is followed by the bridge reading its functions: let that finish before measuring.
    await sleep(Math.min(10_000, 2000 + o.devices / 2));
    const loaded = rssKb(bridge.proc.pid!);
    const connectCpu = cpuMs(bridge.proc.pid!) - cpu0;
    say(`all connected in ${Date.now() - t0} ms; bridge RSS ${idle} kB idle, ${loaded} kB with ${o.devices} devices`);
    const report: ScaleReport = {
      devices: o.devices,
      workers: workers.length,
      nofile_limit: { bridge: limit, needed },
      card_bytes: cardBytes,
      bridge_idle_rss_kb: idle,
      bridge_loaded_rss_kb: loaded,
      rss_per_device_bytes: Math.round(((loaded - idle) * 1024) / o.devices),
      connect_all_ms: connectMs,
      bridge_cpu_ms_per_connect: connectCpu / o.devices,
    };
    if (o.restart) {
      say('killing the bridge and starting it again on the same port');
      bridge.proc.kill('SIGKILL');
      await new Promise((r) => bridge!.proc.once('exit', r));
      const killedAt = Date.now();
      bridge = await startBridge();
      const restartMs = Date.now() - killedAt;
      say(`bridge back after ${restartMs} ms`);
      const picks = Array.from({ length: o.calls }, () => devices[Math.floor(Math.random() * devices.length)]!.device_id);
      const calls = picks.map((d) => callUntilDone(url, runtime, d, 60_000));
      const readyAt = Date.now();
      const back = await waitAll('reconnect', killedAt, o.reconnectLimitMs ?? 120_000);
      const reconnectCpu = cpuMs(bridge.proc.pid!);
      const results = await Promise.all(calls);
      report.restart = {
        bridge_restart_ms: restartMs,
        reconnect_all_ms: back.at === null ? null : back.at - readyAt,
        reconnected: back.n,
        since_kill_ms: back.at === null ? null : back.at - killedAt,
        bridge_cpu_ms_per_reconnect: reconnectCpu / Math.max(1, back.n),
        calls: o.calls,
        calls_completed: results.filter((r) => r.ok).length,
        slowest_call_ms: Math.max(0, ...results.map((r) => r.ms)),
        retries: results.reduce((s, r) => s + r.retries, 0),
      };
    }
    return report;
  } finally {
    for (const w of workers) {
      if (w.connected) w.send({ cmd: 'stop' } satisfies WorkerCommand);
    }
    await Promise.all(workers.map((w) => (w.exitCode !== null ? undefined : new Promise((r) => { const t = setTimeout(() => w.kill('SIGKILL'), 5000); w.once('exit', () => r(clearTimeout(t))); }))));
    await bridge?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A runtime's call through the bridge, retried while the device is offline (409), until it completes or `limitMs` passes. */
async function callUntilDone(base: string, token: string, deviceId: string, limitMs: number): Promise<{ ok: boolean; ms: number; retries: number }> {
  const t0 = Date.now();
  let retries = 0;
  const body = JSON.stringify({ workspace_id: IDS.workspace_id, device_id: deviceId, function: 'diagnostics.echo', arguments: { value: deviceId }, wait: true, call_id: `scale-${deviceId}-${randomBytes(6).toString('hex')}` });
  while (Date.now() - t0 < limitMs) {
    const r = await new Promise<{ status: number; text: string }>((resolve) => {
      const req = http.request(new URL('/v1/calls', base), { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', () => resolve({ status: 0, text: '' }));
      req.end(body);
    });
    if (r.status === 200) {
      const rec = JSON.parse(r.text) as { state?: string; outcome?: { output?: { value?: unknown } } };
      return { ok: rec.state === 'completed' && rec.outcome?.output?.value === deviceId, ms: Date.now() - t0, retries };
    }
    // Offline (409), the bridge not up yet (0), or not finished (202: the same call_id is asked again).
    retries++;
    await sleep(200);
  }
  return { ok: false, ms: Date.now() - t0, retries };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      devices: { type: 'string', default: '10000' },
      workers: { type: 'string', default: '2' },
      calls: { type: 'string', default: '100' },
      concurrency: { type: 'string', default: '256' },
      'no-restart': { type: 'boolean', default: false },
      'reconnect-limit-ms': { type: 'string', default: '120000' },
      json: { type: 'boolean', default: false },
    },
  });
  const r = await runScale({
    devices: positiveInt(values.devices, 'devices'),
    workers: positiveInt(values.workers, 'workers'),
    calls: positiveInt(values.calls, 'calls'),
    concurrency: positiveInt(values.concurrency, 'concurrency'),
    restart: !values['no-restart'],
    reconnectLimitMs: positiveInt(values['reconnect-limit-ms'], 'reconnect-limit-ms'),
    progress: (l) => process.stderr.write(l + '\n'),
  });
  if (values.json) {
    process.stdout.write(JSON.stringify(r, null, 2) + '\n');
    return;
  }
  const lines = [
    `${r.devices} simulated devices in ${r.workers} worker processes; signed Adapter Card ${r.card_bytes} bytes each; bridge open-files limit ${r.nofile_limit.bridge} (needed ${r.nofile_limit.needed})`,
    `bridge RSS idle ${r.bridge_idle_rss_kb} kB, with every device connected ${r.bridge_loaded_rss_kb} kB: ${(r.rss_per_device_bytes / 1000).toFixed(1)} kB per device   (target ≤ 20 kB)`,
    `all devices connected in ${r.connect_all_ms} ms; the bridge used ${r.bridge_cpu_ms_per_connect.toFixed(2)} ms of CPU per device connecting`,
  ];
  if (r.restart) {
    lines.push(r.restart.reconnect_all_ms === null
      ? `after a bridge restart (killed; ready again ${r.restart.bridge_restart_ms} ms later): only ${r.restart.reconnected}/${r.devices} back within the limit   (target: all within 30 000 ms)`
      : `after a bridge restart (killed; ready again ${r.restart.bridge_restart_ms} ms later): all ${r.devices} back ${r.restart.reconnect_all_ms} ms after it was ready (${r.restart.since_kill_ms} ms after the kill)   (target ≤ 30 000 ms)`);
    lines.push(`the restarted bridge used ${r.restart.bridge_cpu_ms_per_reconnect.toFixed(2)} ms of CPU per device reconnecting (its start included)`);
    lines.push(`calls to ${r.restart.calls} random devices during the storm: ${r.restart.calls_completed} completed, slowest ${r.restart.slowest_call_ms} ms, ${r.restart.retries} retries of device_offline/not ready`);
  }
  process.stdout.write(lines.join('\n') + '\n');
}

if (isMain(import.meta.url)) runMain('bench:scale', main);
