/**
 * Test stacks: a real bridge and a real agent talking over a real WebSocket on loopback, either in this
 * process (fast, for protocol-level tests) or as separate CLI processes (for crash and restart tests).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { normalizeAgentConfig } from '../../src/config/agent-config.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import type { AgentOptions } from '../../src/agent/agent.js';
import { startAgent, type RunningAgent } from '../../src/app/start-agent.js';
import { silentLogger } from '../../src/base/logger.js';
import { BridgeServer, type BridgeOptions } from '../../src/bridge/server.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { until } from './wait.js';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const CLI = join(ROOT, 'src', 'cli', 'main.ts');

/** A fresh temp dir removed by `cleanup`. */
export function tempDir(prefix = 'aios-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export const ids = { workspace_id: 'ws_t', user_id: 'usr_t', device_id: 'dev_t' };

/** Tokens and identity for one test stack. */
export function tokens() {
  return { runtime: 'rt_' + randomBytes(12).toString('hex'), device: 'dt_' + randomBytes(12).toString('hex') };
}

export function bridgeDoc(dir: string, t: ReturnType<typeof tokens>, extra: Record<string, unknown> = {}) {
  return {
    listen: { host: '127.0.0.1', port: 0 },
    data_dir: join(dir, 'bridge'),
    ...extra,
    // Extra tokens add to the stack's own (another workspace's runtime or device), they do not replace them.
    runtime_tokens: { [t.runtime]: { workspace_id: ids.workspace_id }, ...(extra['runtime_tokens'] as object | undefined) },
    device_tokens: { [t.device]: { ...ids }, ...(extra['device_tokens'] as object | undefined) },
  };
}

export function agentDoc(dir: string, url: string, t: ReturnType<typeof tokens>, extra: Record<string, unknown> = {}) {
  return {
    bridge: { url: url.replace(/^http/, 'ws') + '/v1/device', token: t.device },
    identity: { ...ids, device_name: 'Test device' },
    data_dir: join(dir, 'agent'),
    local_endpoint: { host: '127.0.0.1', port: 0, socket: false },
    handlers: { diagnostics: { enabled: true } },
    ...extra,
  };
}

export { until };

/** Bridge and agent in this process. */
export async function inProcessStack(opts: { bridge?: Record<string, unknown>; agent?: Record<string, unknown>; agentOptions?: Partial<AgentOptions>; bridgeOptions?: Partial<BridgeOptions>; connect?: boolean } = {}) {
  const dir = tempDir();
  const t = tokens();
  const bridge = new BridgeServer(normalizeBridgeConfig(bridgeDoc(dir, t, opts.bridge)), { log: silentLogger(), ...opts.bridgeOptions });
  const url = await bridge.start();
  const client = new RuntimeClient({ bridge_url: url, token: t.runtime, workspace_id: ids.workspace_id, device_id: ids.device_id });
  const makeAgent = (extra: Record<string, unknown> = {}): Promise<RunningAgent> =>
    startAgent(normalizeAgentConfig(agentDoc(dir, url, t, { ...opts.agent, ...extra })), silentLogger(), {
      backoff: { baseMs: 20, capMs: 200, resetAfterMs: 60_000 },
      ...opts.agentOptions,
    });
  const running = await makeAgent();
  const agent = running.agent;
  if (opts.connect !== false) await until(() => bridge.hub.isOnline(ids.device_id), 10_000, 'agent online');
  return {
    dir,
    url,
    tokens: t,
    bridge,
    agent,
    running,
    client,
    makeAgent,
    async stop() {
      await running.stop().catch(() => undefined);
      await bridge.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A CLI child process with its output captured. */
export class Proc {
  out = '';
  err = '';
  exited: Promise<number | null>;
  constructor(readonly child: ChildProcess) {
    child.stdout?.on('data', (d: Buffer) => (this.out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.err += d.toString()));
    this.exited = new Promise((r) => child.on('exit', (code) => r(code)));
  }
  kill(sig: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    this.child.kill(sig);
    return this.exited;
  }
}

/** How many lines of a process's output a failed wait shows. */
const TAIL = 50;

/** The last `n` lines of `text`. */
export function tail(text: string, n = TAIL): string {
  return text.split('\n').slice(-n - 1).join('\n');
}

/** A child process's state and the end of its output, for a failure message. */
export function procReport(name: string, p: Proc | undefined): string {
  if (!p) return `--- ${name}: not started ---`;
  const c = p.child;
  const state = c.exitCode !== null || c.signalCode !== null ? `exited (code ${c.exitCode}, signal ${c.signalCode})` : `running (pid ${c.pid})`;
  return `--- ${name}: ${state} ---\n--- ${name} stderr (last ${TAIL} lines) ---\n${tail(p.err)}\n--- ${name} stdout (last ${TAIL} lines) ---\n${tail(p.out)}`;
}

/** Runs the CLI (through tsx) as a child process. */
export function cli(args: string[], env: Record<string, string> = {}): Proc {
  // English unless a test asks for another language: tests read the CLI's words.
  return new Proc(spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, env: { ...process.env, LC_ALL: 'C.UTF-8', ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** Runs the CLI to completion. */
export async function cliRun(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  const p = cli(args, env);
  const code = await p.exited;
  return { code, out: p.out, err: p.err };
}

/** Bridge and agent as separate CLI processes. */
export async function processStack(opts: { bridge?: Record<string, unknown>; agent?: Record<string, unknown> } = {}) {
  const dir = tempDir();
  const t = tokens();
  mkdirSync(join(dir, 'bridge'), { recursive: true, mode: 0o700 });
  const bcfg = join(dir, 'bridge.json.cfg');
  writeFileSync(bcfg, JSON.stringify(bridgeDoc(dir, t, opts.bridge)));
  const bridgeFile = join(dir, 'bridge', 'bridge.json');
  let bridge = cli(['bridge', '--config', bcfg]);
  await until(() => existsSync(bridgeFile), 20_000, 'bridge.json').catch(async (e: Error) => {
    const report = procReport('bridge', bridge);
    await bridge.kill('SIGKILL');
    throw new Error(`${e.message}\n${report}`, { cause: e });
  });
  const url = (JSON.parse(readFileSync(bridgeFile, 'utf8')) as { url: string }).url;
  const acfg = join(dir, 'agent.json.cfg');
  writeFileSync(acfg, JSON.stringify(agentDoc(dir, url, t, { log: { level: 'debug', file: join(dir, 'agent.log') }, ...opts.agent })));
  const client = new RuntimeClient({ bridge_url: url, token: t.runtime, workspace_id: ids.workspace_id, device_id: ids.device_id });
  const online = async (want: boolean) => {
    try {
      return await until(async () => {
        // An agent that died at start never comes online: say so now instead of after the whole wait.
        if (want && s.agent && (s.agent.child.exitCode !== null || s.agent.child.signalCode !== null)) throw new Error('the agent exited before the device came online');
        return (await client.device(ids.device_id))['online'] === want;
      }, 20_000, want ? 'device online' : 'device offline');
    } catch (e) {
      // A timeout says why: what the agent (whichever process s.agent is now) printed and logged.
      throw new Error(`${(e as Error).message}\n${procReport('agent', s.agent)}\n--- agent.log (last ${TAIL} lines) ---\n${tail(s.agentLog())}`, { cause: e });
    }
  };
  const s = {
    dir,
    url,
    tokens: t,
    client,
    agent: undefined as unknown as Proc,
    bridge,
    agentConfig: acfg,
    online,
    async startAgent() {
      s.agent = cli(['run', '--config', acfg]);
      await online(true);
      return s.agent;
    },
    async restartBridge() {
      await s.bridge.kill('SIGKILL');
      rmSync(bridgeFile, { force: true });
      // Same port, so the agent's configured URL stays valid.
      const port = new URL(url).port;
      writeFileSync(bcfg, JSON.stringify(bridgeDoc(dir, t, { ...opts.bridge, listen: { host: '127.0.0.1', port: Number(port) } })));
      s.bridge = bridge = cli(['bridge', '--config', bcfg]);
      await until(() => existsSync(bridgeFile), 20_000, 'bridge.json after restart').catch((e: Error) => {
        throw new Error(`${e.message}\n${procReport('bridge', bridge)}`, { cause: e });
      });
    },
    agentLog(): string {
      const f = join(dir, 'agent.log');
      return existsSync(f) ? readFileSync(f, 'utf8') : '';
    },
    async stop() {
      await s.agent?.kill('SIGKILL');
      await s.bridge.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await s.startAgent();
  } catch (e) {
    // The caller never gets `s` to stop: end the processes here, or they keep the test file alive until its
    // timeout (a hook that failed on a busy machine then cost the whole file's 15 minutes).
    await s.stop().catch(() => undefined);
    throw e;
  }
  return s;
}
