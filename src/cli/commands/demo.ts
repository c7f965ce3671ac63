/**
 * `aios-device demo`: one command that starts a local bridge and the agent with a demo workspace, a
 * demo folder and freshly generated tokens, then says what to run next.
 */
import { randomBytes } from 'node:crypto';
import { say, sayError } from '../say.js';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import YAML from 'yaml';
import { loadAgentConfig } from '../../config/agent-config.js';
import { loadBridgeConfig } from '../../config/bridge-config.js';
import { createLogger } from '../../base/logger.js';
import { startAgent } from '../../app/start-agent.js';
import { writeJsonFileSync } from '../../base/json-file.js';
import { intOption, onShutdownSignals } from '../process.js';
import { hashPassword } from '../../base/password.js';
import { tellConsole } from './core.js';

const token = (prefix: string) => prefix + randomBytes(24).toString('base64url');

/** Writes the demo's config files once (kept across runs so call history survives); returns their paths. */
export function prepareDemo(dir: string, port: number): { bridgeConfig: string; agentConfig: string; profile: string; shared: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const bridgeConfig = join(dir, 'bridge.yaml');
  const agentConfig = join(dir, 'agent.yaml');
  const profile = join(dir, 'runtime.json');
  const shared = join(dir, 'shared');
  mkdirSync(shared, { recursive: true });
  if (!existsSync(join(shared, 'hello.txt'))) writeFileSync(join(shared, 'hello.txt'), 'Hello from the AIOS Device demo folder.\nThis file is shared with the agent (read and write).\n');
  // First run: tokens, identities and the shared folder. The port is set below, on every run.
  if (!existsSync(bridgeConfig)) {
    const runtimeToken = token('rt_');
    const deviceToken = token('dt_');
    writeYaml(bridgeConfig, {
      data_dir: './bridge-data',
      runtime_tokens: { [runtimeToken]: { workspace_id: 'ws_demo', name: 'demo runtime' } },
      device_tokens: { [deviceToken]: { workspace_id: 'ws_demo', user_id: 'usr_demo', device_id: 'dev_demo' } },
    });
    writeFileSync(join(dir, 'device-token'), deviceToken + '\n', { mode: 0o600 });
    writeJsonFileSync(profile, { token: runtimeToken, workspace_id: 'ws_demo', device_id: 'dev_demo' }, 0o600);
  }
  if (!existsSync(agentConfig)) {
    writeYaml(agentConfig, {
      bridge: { token_file: './device-token' },
      identity: { workspace_id: 'ws_demo', user_id: 'usr_demo', device_id: 'dev_demo', device_name: 'Demo device' },
      data_dir: './agent-data',
      local_endpoint: { host: '127.0.0.1', port: 0 },
      grants: { files: [{ path: './shared', access: 'read_write', name: 'Demo' }] },
      confirmations: { provider: 'auto', timeout_ms: 60000 },
      // The QA demo: the call-path diagnostics the trial needs (timeouts, cancel, prompts), no effect on the machine.
      handlers: { diagnostics: { enabled: true } },
    });
  }
  // A demo made before the diagnostics were on gets them on its next start (unless its config says otherwise).
  update(agentConfig, YAML.parse, (a: { handlers?: Record<string, unknown> }) => (a.handlers?.['diagnostics'] !== undefined ? a : { ...a, handlers: { ...a.handlers, diagnostics: { enabled: true } } }), writeYaml);
  // This run's port, in the three files (tokens and data stay as they are).
  update(bridgeConfig, YAML.parse, (b: { listen?: object }) => ({ ...b, listen: { host: '127.0.0.1', ...b.listen, port } }), writeYaml);
  update(agentConfig, YAML.parse, (a: { bridge?: object }) => ({ ...a, bridge: { ...a.bridge, url: `ws://127.0.0.1:${port}/v1/device` } }), writeYaml);
  // Each demo folder its own local socket, so two demos (or a demo and an installed agent) do not collide.
  const sock = join(dir, 'agent.sock');
  if (process.platform !== 'win32' && Buffer.byteLength(sock) < 100) {
    update(agentConfig, YAML.parse, (a: { local_endpoint?: { socket?: unknown } }) => (a.local_endpoint?.socket !== undefined ? a : { ...a, local_endpoint: { ...a.local_endpoint, socket: sock } }), writeYaml);
  }
  update(profile, JSON.parse, (r: object) => ({ ...r, bridge_url: `http://127.0.0.1:${port}` }), (f, v) => writeJsonFileSync(f, v, 0o600));
  return { bridgeConfig, agentConfig, profile, shared };
}

/** The demo user's password file, next to the demo's configs. */
export const DEMO_PASSWORD_FILE = 'demo-password';

/**
 * Gives the demo bridge a user who can approve device sign-ins (its password generated once, kept in
 * `demo-password`, printed at start), so a newcomer can try `aios-device login` end to end. A demo made
 * before this existed gets the user added on its next start.
 */
export async function ensureDemoUser(dir: string, bridgeConfig: string): Promise<{ name: string; password: string }> {
  const pwFile = join(dir, DEMO_PASSWORD_FILE);
  const doc = YAML.parse(readFileSync(bridgeConfig, 'utf8')) as { users?: { name?: string }[] };
  if (doc.users?.length && existsSync(pwFile)) return { name: doc.users[0]?.name ?? 'demo', password: readFileSync(pwFile, 'utf8').trim() };
  const password = randomBytes(9).toString('base64url');
  writeFileSync(pwFile, password + '\n', { mode: 0o600 });
  const user = { id: 'usr_demo', name: 'demo', password_hash: await hashPassword(password), workspaces: ['ws_demo'] };
  writeYaml(bridgeConfig, { ...doc, users: [user], device_poll_interval_s: 1 });
  return { name: user.name, password };
}

function writeYaml(file: string, value: unknown): void {
  writeFileSync(file, YAML.stringify(value), { mode: 0o600 });
}

/** Rewrites `file` with `change` applied, only when that changes something. */
function update<T extends object>(file: string, parse: (text: string) => unknown, change: (v: T) => T, write: (file: string, v: T) => void): void {
  const before = parse(readFileSync(file, 'utf8')) as T;
  const after = change(before);
  if (JSON.stringify(after) !== JSON.stringify(before)) write(file, after);
}

/** An example port name for this platform (docs/handlers/serial.md, "Platforms"). */
function examplePort(platform: NodeJS.Platform): string {
  if (platform === 'win32') return 'COM3';
  if (platform === 'darwin') return '/dev/cu.usbserial-1410';
  return '/dev/ttyUSB0';
}

/** The demo's lines about serial ports: which are granted, or how to grant one. */
export function serialHelp(granted: readonly unknown[], agentConfig: string, listCommand: string, platform: NodeJS.Platform = process.platform): string[] {
  if (granted.length) {
    const names = granted.map((g) => (typeof g === 'string' ? g : ((g as { alias?: string; path?: string }).alias ?? (g as { path?: string }).path ?? '?')));
    return [say('cli.demo.serial_granted', { names: names.join(', ') }), `  ${listCommand}`];
  }
  return [
    say('cli.demo.serial_none'),
    say('cli.demo.serial_how', { command: listCommand, file: agentConfig }),
    '  grants:',
    '    serial:',
    `      - { path: ${examplePort(platform)}, alias: scale, baud: 9600 }`,
    say('cli.demo.serial_alias', { port: examplePort(platform) }),
    say('cli.demo.serial_docs'),
  ];
}

/** Registers `demo`. */
export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description(say('cli.help.demo'))
    .option('--dir <dir>', say('cli.help.demo.dir'), '.demo')
    .option('--port <port>', say('cli.help.demo.port'), intOption('--port', 0, 65535), 8700)
    .action(async (o: { dir: string; port: number }) => {
      const dir = resolve(o.dir);
      const files = prepareDemo(dir, o.port);
      const demoUser = await ensureDemoUser(dir, files.bridgeConfig);
      const bcfg = loadBridgeConfig(files.bridgeConfig);
      const acfg = loadAgentConfig(files.agentConfig);
      const blog = createLogger({ name: 'aios-bridge', file: join(dir, 'bridge.log'), ownFile: true });
      const alog = createLogger({ file: join(dir, 'agent.log'), ownFile: true });
      const { startBridge } = await import('../../app/start-bridge.js');
      const bridge = await startBridge(bcfg, blog).catch((e: Error) => {
        if ((e.cause as NodeJS.ErrnoException | undefined)?.code !== 'EADDRINUSE') throw e;
        throw new Error(say('cli.demo.port_in_use', { port: o.port }), { cause: e });
      });
      // The demo is the two together: an agent that cannot start stops the bridge too, and says why.
      const agent = await startAgent(acfg, alog).catch(async (e: Error) => {
        await bridge.stop().catch(() => undefined);
        throw new Error(say('cli.demo.agent_failed', { error: sayError(e) }), { cause: e });
      });
      tellConsole(agent.agent);
      const r = relative(process.cwd(), dir);
      const rel = r && !r.startsWith('..') ? r : dir;
      const cli = existsSync(resolve('dist/src/cli/main.js')) ? 'node dist/src/cli/main.js' : 'npx aios-device';
      const profileNote = rel === '.demo' ? '' : ` --runtime ${join(rel, 'runtime.json')}`;
      const token = (JSON.parse(readFileSync(files.profile, 'utf8')) as { token: string }).token;
      process.stdout.write(
        [
          '',
          say('cli.demo.running'),
          say('cli.demo.bridge', { url: bridge.url }),
          say('cli.demo.agent', { count: agent.agent.registry.ids().length }),
          say('cli.demo.shared', { dir: files.shared }),
          say('cli.demo.logs', { files: `${join(rel, 'agent.log')}, ${join(rel, 'bridge.log')}` }),
          '',
          say('cli.demo.try'),
          `  ${cli} invoke device.info${profileNote}`,
          `  ${cli} invoke device.info --call-id demo-1${profileNote}     ${say('cli.demo.replay_hint')}`,
          `  ${cli} functions${profileNote}`,
          `  curl -s -H 'Authorization: Bearer ${token}' ${bridge.url}/v1/devices`,
          '',
          say('cli.demo.signin'),
          say('cli.demo.user', { name: demoUser.name, password: demoUser.password, file: join(rel, DEMO_PASSWORD_FILE) }),
          `  ${cli} login --bridge ${bridge.url} --data-dir ${join(rel, 'login-try')} --token-file ${join(rel, 'login-try', 'tokens.json')}`,
          say('cli.demo.approve', { url: `${bridge.url}/device` }),
          '',
          ...serialHelp(acfg.grants?.serial ?? [], relative(process.cwd(), files.agentConfig) || files.agentConfig, `${cli} invoke serial.list_ports${profileNote}`),
          '',
          say('cli.demo.stop'),
          '',
        ].join('\n'),
      );
      onShutdownSignals(async () => {
        await agent.stop();
        await bridge.stop();
      });
    });
}
