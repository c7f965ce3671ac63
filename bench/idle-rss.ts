/**
 * Memory at rest (issue 21 item 6): the headless agent's resident set size some seconds (30 by default)
 * after it was started, with a minimal config and with the demo's (`npm start` writes it:
 * `prepareDemo` in src/cli/commands/demo.ts), both with every built-in handler loaded. Each agent runs as
 * `aios-device run -c <config>` does (`dist/agent/main.js run`, the compiled bundle), connected to a reference
 * bridge in a process of its own, and is left alone until the measurement. RSS is read from
 * `/proc/<pid>/status` (Linux; elsewhere from `ps -o rss=`).
 *
 * `--after-calls N` also measures each agent once it has been used: N `diagnostics.echo` calls (16 in flight)
 * through the bridge's HTTP API once it is ready, then RSS `--after-s` seconds after the last call. (A used
 * agent has its optimising compiler running: src/base/optimiser.ts holds it off only until the first call.)
 *
 * Run: npm run bench:idle-rss [-- --after-s N] [--after-calls N] [--json]
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import YAML from 'yaml';
import { prepareDemo } from '../src/cli/commands/demo.js';
import { benchFile, isMain, loaderFor, positiveInt, runMain, startChild } from './child.js';
import { FIGURES, formatVerdicts, verdicts } from './targets.js';
import { measureThroughput } from './stats.js';
import { RuntimeClient } from '../src/runtime-client/client.js';

/** One agent's memory, `afterS` seconds after it was spawned. */
export interface IdleRssSample {
  config: 'minimal' | 'demo';
  rssMb: number;
  /** Milliseconds from the spawn to the agent's `agent ready` line. */
  readyMs: number;
  /** With `afterCalls`: RSS `afterS` seconds after the last of those calls. */
  rssAfterCallsMb?: number;
  /** How many functions the agent registered (all built-in handlers: the same in both configs). */
  functions: number;
}

/**
 * The CLI entry point the product ships (`aios-device`): compiled, the bundle `npm run build` makes
 * (dist/agent/main.js, scripts/build-agent-bundle.mjs); from source, src/cli/main.ts. `BENCH_AGENT_MAIN`
 * names another (dist/src/cli/main.js: the compiled modules unbundled).
 */
function cliMain(): string {
  const other = process.env['BENCH_AGENT_MAIN'];
  if (other) return other;
  // bench/ and src/ are siblings, in the sources as in dist/.
  if (!import.meta.url.endsWith('.js')) return fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
  const bundle = fileURLToPath(new URL('../agent/main.js', import.meta.url));
  return existsSync(bundle) ? bundle : fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
}

/** Resident set size of `pid` in MB (10^6 bytes). */
export function rssMbOf(pid: number): number {
  if (process.platform === 'linux') {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (m) return (Number(m[1]) * 1024) / 1e6;
  }
  return (Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' }).trim()) * 1024) / 1e6;
}

const IDS = { workspace_id: 'ws_rss', user_id: 'usr_rss' } as const;

/** Starts `aios-device run -c file` in `cwd`; resolves with the process and its function count once it is ready. */
function startAgentProcess(file: string, cwd: string, nodeArgs: string[]) {
  const main = cliMain();
  // The agent runs in its own folder, where a bare `--import tsx` (sources, the smoke test) would not resolve.
  const loader = loaderFor(main).map((a) => (a === 'tsx' ? import.meta.resolve('tsx') : a));
  const proc = spawn(process.execPath, [...nodeArgs, ...loader, main, 'run', '-c', file], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  const spawnedAt = Date.now();
  // The functions the agent registered, and how long after its spawn it said so.
  const ready = new Promise<{ functions: number; readyMs: number }>((resolve, reject) => {
    const lines = createInterface({ input: proc.stderr! });
    let tail = '';
    lines.on('line', (l) => {
      tail = (tail + '\n' + l).slice(-2000);
      const m = /^agent ready: (\d+) functions/.exec(l);
      if (m) resolve({ functions: Number(m[1]), readyMs: Date.now() - spawnedAt });
      // Anything else the agent says (warnings, errors) is worth seeing next to the figure.
      else process.stderr.write(`[agent ${file}] ${l}\n`);
    });
    proc.once('exit', (code) => reject(new Error(`the agent (${file}) exited (${code}) before it was ready:${tail}`)));
  });
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.kill('SIGTERM');
    await exited;
    clearTimeout(kill);
  };
  return { proc, spawnedAt, ready, stop };
}

/**
 * Starts a bridge and two agents (minimal config, demo's config) side by side, waits until `afterS`
 * seconds after each agent was spawned and reads its RSS. `nodeArgs` go to the agents (e.g.
 * `--heap-prof`).
 */
export async function measureIdleRss(o: { afterS: number; afterCalls?: number; nodeArgs?: string[]; say?: (l: string) => void }): Promise<IdleRssSample[]> {
  const say = o.say ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'aios-bench-rss-'));
  const tokens = { minimal: 'dt_' + randomBytes(12).toString('hex'), demo: 'dt_' + randomBytes(12).toString('hex') };
  const runtime = { minimal: 'rt_' + randomBytes(12).toString('hex'), demo: 'rt_' + randomBytes(12).toString('hex') };
  const bridgeDoc = {
    listen: { host: '127.0.0.1', port: 0 },
    data_dir: join(dir, 'bridge'),
    // `--after-calls` sends its calls as fast as the agents answer them: above the default per-token rate.
    runtime_rate_limit: { per_second: 100_000, burst: 100_000 },
    runtime_tokens: { [runtime.minimal]: { workspace_id: IDS.workspace_id }, [runtime.demo]: { workspace_id: 'ws_demo' } },
    // The demo's config names its own identity (src/cli/commands/demo.ts).
    device_tokens: { [tokens.minimal]: { ...IDS, device_id: 'dev_min' }, [tokens.demo]: { workspace_id: 'ws_demo', user_id: 'usr_demo', device_id: 'dev_demo' } },
  };
  const bridge = await startChild<{ url: string }>(benchFile('bridge-child'), [JSON.stringify(bridgeDoc)]);
  const agents: ReturnType<typeof startAgentProcess>[] = [];
  try {
    const wsUrl = bridge.info.url.replace(/^http/, 'ws') + '/v1/device';
    // Every built-in handler: diagnostics is the only opt-in one. The local endpoint as in the defaults but on a free
    // port and a socket of its own (the defaults are shared by every agent of this user on the machine).
    const allHandlers = { diagnostics: { enabled: true } };
    const minDir = join(dir, 'minimal');
    mkdirSync(minDir, { mode: 0o700 });
    const minimal = join(minDir, 'agent.json');
    writeFileSync(minimal, JSON.stringify({ bridge: { url: wsUrl, token: tokens.minimal }, identity: { ...IDS, device_id: 'dev_min' }, data_dir: join(minDir, 'data'), local_endpoint: { port: 0, socket: join(minDir, 'agent.sock') }, handlers: allHandlers }), { mode: 0o600 });
    // The demo's own config, as `npm start` writes it, pointed at this bridge with this bridge's token.
    const demoDir = join(dir, 'demo');
    mkdirSync(demoDir, { mode: 0o700 });
    writeFileSync(join(demoDir, 'device-token'), tokens.demo + '\n', { mode: 0o600 });
    writeFileSync(join(demoDir, 'bridge.yaml'), '{}\n', { mode: 0o600 });
    writeFileSync(join(demoDir, 'runtime.json'), '{}\n', { mode: 0o600 });
    const files = prepareDemo(demoDir, Number(new URL(bridge.info.url).port));
    // Only the demo's identity differs from what this bridge knows; all handlers as in the minimal config
    // (the demo itself turns the diagnostics on since it became the QA demo: this keeps it so if it stops).
    const demoDoc = YAML.parse(readFileSync(files.agentConfig, 'utf8')) as { handlers?: Record<string, unknown> };
    demoDoc.handlers = { ...demoDoc.handlers, diagnostics: { enabled: true } };
    writeFileSync(files.agentConfig, YAML.stringify(demoDoc), { mode: 0o600 });
    const configs = [
      { config: 'minimal' as const, file: minimal, cwd: minDir, client: { token: runtime.minimal, workspace_id: IDS.workspace_id, device_id: 'dev_min' } },
      { config: 'demo' as const, file: files.agentConfig, cwd: demoDir, client: { token: runtime.demo, workspace_id: 'ws_demo', device_id: 'dev_demo' } },
    ];
    for (const c of configs) agents.push(startAgentProcess(c.file, c.cwd, o.nodeArgs ?? []));
    const readies = await Promise.all(agents.map((a) => a.ready));
    say(`agents ready (${readies.map((r) => r.functions).join(', ')} functions); waiting until ${o.afterS} s after their start`);
    const out: IdleRssSample[] = [];
    for (const [i, a] of agents.entries()) {
      const wait = a.spawnedAt + o.afterS * 1000 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      out.push({ config: configs[i]!.config, rssMb: rssMbOf(a.proc.pid!), ...readies[i]! });
    }
    if (o.afterCalls) {
      const clients = configs.map((c) => new RuntimeClient({ bridge_url: bridge.info.url, ...c.client }));
      say(`${o.afterCalls} calls to each agent`);
      await Promise.all(clients.map((c) => measureThroughput(() => echo(c), o.afterCalls!, 16)));
      await new Promise((r) => setTimeout(r, o.afterS * 1000));
      for (const [i, a] of agents.entries()) out[i]!.rssAfterCallsMb = rssMbOf(a.proc.pid!);
    }
    return out;
  } finally {
    await Promise.all(agents.map((a) => a.stop()));
    await bridge.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One `diagnostics.echo` call through the bridge's HTTP API; throws unless it completed. */
async function echo(client: RuntimeClient): Promise<void> {
  const { record } = await client.call('diagnostics.echo', { value: 'rss' });
  if (record.state !== 'completed') throw new Error(`a call ended ${record.state}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'after-s': { type: 'string', default: process.env['BENCH_AFTER_S'] ?? '30' }, 'after-calls': { type: 'string', default: '0' }, json: { type: 'boolean', default: false } } });
  const afterCalls = Number(values['after-calls']);
  if (!Number.isInteger(afterCalls) || afterCalls < 0) throw new Error('--after-calls takes a whole number of calls (0: none)');
  const samples = await measureIdleRss({ afterS: positiveInt(values['after-s'], 'after-s'), afterCalls, say: (l) => process.stderr.write(l + '\n') });
  if (values.json) {
    process.stdout.write(JSON.stringify(samples, null, 2) + '\n');
    return;
  }
  for (const s of samples) {
    process.stdout.write(`headless agent idle RSS, ${values['after-s']} s after start, ${s.config} config (${s.functions} functions, ready ${s.readyMs} ms after its spawn): ${s.rssMb.toFixed(1)} MB\n`);
    if (s.rssAfterCallsMb !== undefined) process.stdout.write(`  … and ${values['after-s']} s after ${afterCalls} calls: ${s.rssAfterCallsMb.toFixed(1)} MB\n`);
  }
  // The targets' rows for these two figures, as `npm run bench` prints them (bench/targets.ts).
  const rss = (c: IdleRssSample['config']) => samples.find((s) => s.config === c)?.rssMb;
  const rows = FIGURES.filter((f) => f.label.startsWith('headless agent idle RSS'));
  process.stdout.write('\n' + formatVerdicts(verdicts({ idleRssMinimalMb: rss('minimal'), idleRssDemoMb: rss('demo') }, rows)) + '\n');
}

if (isMain(import.meta.url)) runMain('bench:idle-rss', main);
