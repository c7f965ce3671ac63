/**
 * The core subcommands: bridge, run, invoke, functions, status.
 */
import { coreMessage, localeFromEnv, strings } from '../../i18n/index.js';
import { errorLine, say, sayError } from '../say.js';
import { personErrorText } from '../../app/error-text.js';
import { renderViolation } from '../../discovery/adapter-problem.js';
import { functionWords } from '../../sdk/function-words.js';
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { osUserName } from '../../identity/os-user.js';
import type { Command } from 'commander';
import { loadAgentConfig } from '../../config/agent-config.js';
import { callLocal, findRunningAgent } from '../../endpoint/local-client.js';
import { loadBridgeConfig } from '../../config/bridge-config.js';
import { createLogger } from '../../base/logger.js';
import type { RunningAgent } from '../../app/start-agent.js';
import { AgentHost } from '../../app/agent-host.js';
import type { Agent } from '../../agent/agent.js';
import { stopAdviceText, type StopAdvice } from '../../agent/stop-advice.js';
import { BridgeHttpError, RuntimeClient, type RuntimeProfile } from '../../runtime-client/client.js';
import { EXIT_BRIDGE_ERROR, exitForOutcome, EXIT_OUTPUT_INVALID, EXIT_PENDING } from '../exit-codes.js';
import { readProfile } from '../runtime-profile.js';
import { intOption, onShutdownSignals, readUserFile, UsageError } from '../process.js';
import { HttpBlobClient } from '../../agent/blob-client.js';
import { MAX_TIME_PARAM_MS, type BlobRef } from '../../protocol/messages.js';
import { chooseDataDir, withDirOptions, type DirOpts } from '../data-dir.js';
import { CONSENT_DB_FILE, openConsentDb } from '../../consent/db.js';
import { PauseState, type PauseInfo } from '../../consent/pause-state.js';
import { schemaValidator } from '../../protocol/schema-validator.js';
import { table } from '../table.js';
import { controlClient } from '../../control/client.js';

/** Default runtime profile written by the demo. */
export const DEFAULT_PROFILE = '.demo/runtime.json';

function profileFrom(opts: { runtime?: string; bridge?: string; token?: string; tokenFile?: string; workspace?: string; device?: string }): RuntimeProfile {
  const env = process.env;
  // A token on the command line is visible to every user of the machine (ps); kept working, with a warning.
  if (opts.token) process.stderr.write(strings.render(coreMessage('core.cli.token_in_argv'), localeFromEnv()) + '\n');
  const fromFile = opts.tokenFile ? readUserFile(opts.tokenFile).trim() : undefined;
  const file = opts.runtime ?? env['AIOS_RUNTIME_PROFILE'] ?? DEFAULT_PROFILE;
  const explicit = opts.bridge ?? env['AIOS_BRIDGE_URL'];
  const base: Partial<RuntimeProfile> = explicit ? {} : readProfile(resolve(file));
  const p = {
    bridge_url: explicit ?? base.bridge_url,
    token: opts.token ?? fromFile ?? env['AIOS_RUNTIME_TOKEN'] ?? base.token,
    workspace_id: opts.workspace ?? env['AIOS_WORKSPACE'] ?? base.workspace_id,
    device_id: opts.device ?? env['AIOS_DEVICE'] ?? base.device_id,
  };
  for (const k of ['bridge_url', 'token', 'workspace_id'] as const) if (!p[k]) throw new UsageError(say('cli.usage.missing_profile_field', { field: k, flag: k === 'bridge_url' ? 'bridge' : k === 'workspace_id' ? 'workspace' : 'token' }));
  return p as RuntimeProfile;
}

function runtimeOptions(c: Command): Command {
  return c
    .option('--runtime <file>', say('cli.help.runtime.runtime', { file: DEFAULT_PROFILE }))
    .option('--bridge <url>', say('cli.help.runtime.bridge'))
    .option('--token-file <file>', say('cli.help.runtime.token_file'))
    .option('--token <token>', say('cli.help.runtime.token'))
    .option('--workspace <id>', say('cli.help.runtime.workspace'))
    .option('--device <id>', say('cli.help.runtime.device'));
}

function parseArgs(text: string | undefined, file: string | undefined): Record<string, unknown> {
  let raw = text ?? '{}';
  if (file) raw = readUserFile(file);
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new UsageError(say('cli.usage.args_not_json'));
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new UsageError(say('cli.usage.args_not_object'));
  return v as Record<string, unknown>;
}

/** Registers bridge, run, invoke, functions, status. */
export function registerCoreCommands(program: Command): void {
  program
    .command('bridge')
    .description(say('cli.help.bridge'))
    .requiredOption('-c, --config <file>', say('cli.help.bridge.config'))
    .action(async (o: { config: string }) => {
      const cfg = loadBridgeConfig(o.config);
      const log = createLogger({ name: 'aios-bridge', ...(cfg.log?.level ? { level: cfg.log.level } : {}), ...(cfg.log?.file ? { file: cfg.log.file } : {}) });
      if (cfg.store.kind === 'postgres') {
        // The clustered mode: a cluster node serving devices and the calls API (docs/deploy.md, "Clustered bridge").
        const { ClusterNodeServer } = await import('../../bridge/cluster/node-server.js');
        const node = new ClusterNodeServer(cfg, {
          log,
          onStopped: (e) => {
            process.stderr.write(sayError(e) + '\n');
            process.exitCode = 1;
          },
        });
        const url = await node.start();
        process.stderr.write(say('cli.bridge.cluster_node', { node: node.nodeId, count: await node.nodeCount(), url }) + '\n');
        onShutdownSignals(() => node.stop());
        return;
      }
      // Imported here: `run` (the agent at rest) never loads the bridge (issue 32).
      const { startBridge } = await import('../../app/start-bridge.js');
      const b = await startBridge(cfg, log);
      process.stderr.write(say('cli.bridge.listening', { url: b.url, device_url: `${b.url.replace(/^http/, 'ws')}/v1/device` }) + '\n');
      Object.values(cfg.runtime_tokens).forEach((e, i) => {
        if (e.unnamed) process.stderr.write(say('cli.bridge.unnamed_runtime', { n: i + 1, id: e.id }) + '\n');
      });
      onShutdownSignals(() => b.stop());
    });

  program
    .command('run')
    .description(say('cli.help.run'))
    .requiredOption('-c, --config <file>', say('cli.help.run.config'))
    .action(async (o: { config: string }) => {
      const cfg = loadAgentConfig(o.config);
      const log = createLogger({ ...(cfg.log?.level ? { level: cfg.log.level } : {}), ...(cfg.log?.file ? { file: cfg.log.file } : {}) });
      // The host starts the agent again when the window (or `login`) signs in a new identity.
      const host = await AgentHost.start(cfg, log);
      const ready = (a: RunningAgent): void => {
        process.stderr.write(say('cli.run.ready', { count: a.agent.registry.ids().length, file: a.endpointFile }) + '\n');
        const ui = `${a.endpoint?.info()?.http ?? 'http://127.0.0.1:9527'}/ui/`;
        if (a.signin && a.signin.status().state !== 'signed_in') process.stderr.write(say('cli.run.not_signed_in', { ui }) + '\n');
        tellConsole(a.agent);
      };
      ready(host.current);
      host.on('started', ready);
      onShutdownSignals(() => host.stop());
    });

  runtimeOptions(
    program
      .command('invoke <function>')
      .description(say('cli.help.invoke'))
      .option('-a, --args <json>', say('cli.help.invoke.args'), '{}')
      .option('--args-file <file>', say('cli.help.invoke.args_file'))
      .option('--call-id <id>', say('cli.help.invoke.call_id'))
      .option('--timeout-ms <ms>', say('cli.help.invoke.timeout_ms'), intOption('--timeout-ms', 1, MAX_TIME_PARAM_MS))
      .option('--confirm-timeout-ms <ms>', say('cli.help.invoke.confirm_timeout_ms'), intOption('--confirm-timeout-ms', 1, MAX_TIME_PARAM_MS))
      .option('--blob <key=file>', say('cli.help.invoke.blob'), (v: string, acc: string[]) => [...acc, v], [] as string[])
      .option('--save-blob <file>', say('cli.help.invoke.save_blob'))
      .option('--requester <name>', say('cli.help.invoke.requester'), `${osUserName() ?? say('cli.invoke.a_user')} (aios-device invoke)`)
      .option('--no-wait', say('cli.help.invoke.no_wait'))
      .option('--json', say('cli.help.opt.json_record')),
  ).action(async (fn: string, o: Record<string, unknown>) => {
    const profile = profileFrom(o);
    const client = new RuntimeClient(profile);
    const args = parseArgs(o['args'] as string | undefined, o['argsFile'] as string | undefined);
    const blobs = new HttpBlobClient({ baseUrl: profile.bridge_url, token: () => profile.token });
    for (const spec of o['blob'] as string[]) {
      const m = /^([A-Za-z0-9_]+)=([^;]+)(?:;type=(.+))?$/.exec(spec);
      if (!m) throw new UsageError(say('cli.usage.blob_spec', { spec }));
      if (!existsSync(m[2]!)) throw new UsageError(say('cli.usage.blob_no_file', { key: m[1]!, file: m[2]! }));
      args[m[1]!] = await blobs.uploadFile(m[2]!, m[3] ?? 'application/octet-stream');
    }
    try {
      const { record } = await client.call(fn, args, {
        wait: o['wait'] !== false,
        requester: { kind: 'user', name: String(o['requester']) },
        ...(o['callId'] ? { call_id: o['callId'] as string } : {}),
        ...(o['timeoutMs'] ? { timeout_ms: o['timeoutMs'] as number } : {}),
        ...(o['confirmTimeoutMs'] ? { confirm_timeout_ms: o['confirmTimeoutMs'] as number } : {}),
      });
      if (o['json']) process.stdout.write(JSON.stringify(record, null, 2) + '\n');
      else {
        printRecord(record);
        if (record.outcome?.error?.type === 'invalid_arguments') await printArgumentViolations(client, record.device_id, fn, args, record.outcome.error.details);
      }
      process.exitCode = record.outcome ? exitForOutcome(record.outcome) : EXIT_PENDING;
      if (record.outcome?.state === 'completed' && record.outcome.output_valid === false) {
        await printOutputViolations(client, record.device_id, fn, record.outcome.output);
        process.exitCode = EXIT_OUTPUT_INVALID;
      }
      const save = o['saveBlob'] as string | undefined;
      if (save && record.outcome?.state === 'completed') {
        const ref = findBlobRef(record.outcome.output);
        if (!ref) throw new UsageError(say('cli.usage.save_blob_none'));
        await blobs.downloadToFile(ref, save);
        process.stderr.write(say('cli.invoke.saved_blob', { id: ref.blob_id, size: ref.size, sha256: ref.sha256, file: save }) + '\n');
      }
    } catch (e) {
      if (e instanceof BridgeHttpError) {
        if (o['json']) process.stdout.write(JSON.stringify({ error: e.error }, null, 2) + '\n');
        process.stderr.write(say('cli.invoke.refused', { status: e.status, error: errorLine(e.error) }) + '\n');
        if (e.error.details) process.stderr.write(say('cli.invoke.details', { details: JSON.stringify(e.error.details) }) + '\n');
        process.exitCode = EXIT_BRIDGE_ERROR;
        return;
      }
      throw e;
    }
  });

  runtimeOptions(
    program
      .command('cancel <call_id>')
      .description(say('cli.help.cancel'))
      .option('--reason <text>', say('cli.help.cancel.reason'))
      .option('--json', say('cli.help.opt.json_record')),
  ).action(async (callId: string, o: Record<string, unknown>) => {
    const client = new RuntimeClient(profileFrom(o));
    try {
      const record = await client.cancel(callId, o['reason'] as string | undefined);
      if (o['json']) process.stdout.write(JSON.stringify(record, null, 2) + '\n');
      else printRecord(record);
      const state = record.outcome?.state;
      if (state === 'cancelled') return;
      process.stderr.write((state ? say('cli.cancel.already_ended', { state }) : say('cli.cancel.not_ended')) + '\n');
      process.exitCode = state ? 1 : EXIT_PENDING;
    } catch (e) {
      if (!(e instanceof BridgeHttpError)) throw e;
      process.stderr.write(say('cli.cancel.refused', { status: e.status, error: errorLine(e.error) }) + '\n');
      process.exitCode = EXIT_BRIDGE_ERROR;
    }
  });

  runtimeOptions(program.command('functions').description(say('cli.help.functions')).option('--json', say('cli.help.opt.json'))).action(async (o: Record<string, unknown>) => {
    const p = profileFrom(o);
    if (!p.device_id) throw new UsageError(say('cli.usage.no_device'));
    const d = await new RuntimeClient(p).device(p.device_id);
    const fns = (d['functions'] ?? []) as { id: string; name: string; permission_level: string; description: string }[];
    // The bridge keeps an offline device's last list: say it is that, not what the device offers now.
    if (d['online'] === false) process.stderr.write(say('cli.functions.offline', { device: p.device_id, last_seen: String(d['last_seen'] ?? '-') }) + '\n');
    if (o['json']) process.stdout.write(JSON.stringify(fns, null, 2) + '\n');
    else if (fns.length) {
      // Titles and levels in the user's language (a built-in function's from its handler's catalogue); --json keeps the descriptors.
      const locale = localeFromEnv();
      const level = (l: string): string => (strings.has(`core.level.${l}`) ? strings.render({ key: `core.level.${l}` }, locale) : l);
      process.stdout.write(table(fns.map((f) => [f.id, level(f.permission_level), functionWords(f, locale).title])) + '\n');
    }
  });

  runtimeOptions(
    withDirOptions(program.command('status').description(say('cli.help.status'))).option('--json', say('cli.help.opt.json')),
  ).action(async (o: Record<string, unknown>) => {
    const out: Record<string, unknown> = {};
    // Without --data-dir/--config: the demo's agent when run from the repository (`npm start`), else the usual data directory.
    const dataDir = chooseDataDir(o as DirOpts).dir;
    // endpoint.json outlives a crash: the agent counts as running only if its process answers /health.
    const agent = await findRunningAgent(dataDir);
    const stopped = agent?.health['stopped'];
    out['agent'] = agent
      ? { running: true, ...agent.endpoint, data_dir: dataDir, since: statSync(join(dataDir, 'endpoint.json')).mtime.toISOString(), bridge: agent.health['bridge'], ...(stopped ? { stopped } : {}) }
      : { running: false, data_dir: dataDir };
    if (agent) {
      // Adapters running without the sandbox, and new ones waiting for approval (an older agent's status has neither).
      const st = await controlClient((method, params) => callLocal(agent, method, params as Record<string, unknown>)).status().catch(() => undefined);
      if (st?.adapters) (out['agent'] as Record<string, unknown>)['adapters'] = st.adapters;
    }
    const paused = readPaused(dataDir);
    if (paused) (out['agent'] as Record<string, unknown>)['paused'] = paused;
    let bridgeError = '';
    try {
      out['devices'] = (await new RuntimeClient(profileFrom(o)).devices()).devices;
    } catch (e) {
      // --json keeps the English message; the line for a person says it in their language.
      out['bridge'] = { error: (e as Error).message };
      bridgeError = e instanceof BridgeHttpError ? errorLine(e.error) : personErrorText(e, localeFromEnv());
    }
    if (o['json']) process.stdout.write(JSON.stringify(out, null, 2) + '\n');
    else {
      const agent = out['agent'] as Record<string, unknown> | undefined;
      if (agent) process.stdout.write((agent['pid'] ? say('cli.status.agent_running', { pid: String(agent['pid']), version: String(agent['version']), dir: dataDir }) : say('cli.status.agent_not_running', { dir: dataDir })) + '\n');
      if (typeof agent?.['configured_port_taken'] === 'number') process.stdout.write(say('cli.status.port_taken', { port: String(agent['configured_port_taken']), http: String(agent['http']) }) + '\n');
      const st = agent?.['stopped'] as StopAdvice | undefined;
      if (st) process.stdout.write(stopAdviceText(st, localeFromEnv()));
      else if (agent?.['bridge']) process.stdout.write(say('cli.status.bridge_connection', { state: bridgeState(String(agent['bridge'])) }) + '\n');
      const p = agent?.['paused'] as PauseInfo | undefined;
      if (p?.paused) process.stdout.write(say('cli.status.paused_yes', { since: String(p.since), by: String(p.by) }) + '\n');
      else if (p) process.stdout.write(say('cli.status.paused_no') + '\n');
      const ad = agent?.['adapters'] as { unsandboxed: string[]; pending: string[] } | undefined;
      if (ad?.unsandboxed.length) process.stdout.write(say('cli.status.unsandboxed', { ids: ad.unsandboxed.join(', ') }) + '\n');
      if (ad?.pending.length) process.stdout.write(say('cli.status.adapters_pending', { ids: ad.pending.join(', ') }) + '\n');
      if (out['bridge']) process.stdout.write(say('cli.status.bridge_error', { error: bridgeError }) + '\n');
      for (const d of (out['devices'] ?? []) as Record<string, unknown>[]) {
        const fields = { id: String(d['device_id']), online: say(d['online'] ? 'cli.status.online' : 'cli.status.offline'), name: String(d['name'] ?? ''), platform: String(d['platform'] ?? '') };
        process.stdout.write(say('cli.status.device', { ...fields, version: String(d['client_version'] ?? ''), count: (d['functions'] as unknown[]).length }) + '\n');
      }
    }
  });
}

/**
 * Says on stderr where a completed call's output breaks the function's output_schema: the device only
 * reports `output_valid: false`, so the pointers come from checking the output against the descriptor
 * the device published.
 */
async function printOutputViolations(client: RuntimeClient, deviceId: string, fn: string, output: unknown): Promise<void> {
  process.stderr.write(say('cli.output.invalid', { function: fn }) + '\n');
  try {
    const d = await client.descriptor(deviceId, fn);
    const schema = d['output_schema'];
    const found = schema && typeof schema === 'object' ? schemaValidator.validate(schema, output) : [];
    for (const v of found) process.stderr.write(`  ${v.pointer || '/'}: ${v.message}\n`);
  } catch (e) {
    process.stderr.write(say('cli.output.schema_unreadable', { error: (e as Error).message }) + '\n');
  }
}

/**
 * Says where the arguments break the function's input schema, in the user's language: the wire's
 * `details.violations` are English (PROTOCOL §2), so outside English the arguments are checked again
 * against the descriptor the device published and each violation is said with ajv-i18n's words
 * (renderViolation). When the descriptor cannot be read, the wire's details are printed as they came.
 */
async function printArgumentViolations(client: RuntimeClient, deviceId: string, fn: string, args: unknown, details: unknown): Promise<void> {
  const locale = localeFromEnv();
  const asCame = (): void => void (details !== undefined && process.stdout.write(say('cli.invoke.details', { details: JSON.stringify(details) }) + '\n'));
  if (locale === 'en') return asCame();
  try {
    const schema = (await client.descriptor(deviceId, fn))['input_schema'];
    const found = schema && typeof schema === 'object' ? schemaValidator.check(schema, args) : [];
    if (!found.length) return asCame();
    for (const v of found) process.stdout.write(`  ${renderViolation(v, locale)}\n`);
  } catch {
    asCame();
  }
}

/** Tells the agent's console why the bridge session stopped for good and what to do, and when a new sign-in is picked up. */
export function tellConsole(agent: Agent): void {
  agent.on('fatal', () => {
    const a = agent.stopped();
    if (a) process.stderr.write(stopAdviceText(a, localeFromEnv()));
  });
  agent.on('signin', (s) => process.stderr.write(s.message));
}

/** The agent's bridge connection state in the user's words (an unknown state as it came). */
function bridgeState(state: string): string {
  const key = `cli.status.bridge.${state}`;
  return strings.has(key) ? strings.render({ key }, localeFromEnv()) : state;
}

/** The paused flag of the agent with this data directory, or undefined when it has no consent database yet. */
function readPaused(dataDir: string): PauseInfo | undefined {
  if (!existsSync(join(dataDir, CONSENT_DB_FILE))) return undefined;
  try {
    const db = openConsentDb(dataDir);
    try {
      return new PauseState(db).get();
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
}

/** The first blob reference (§9) found in an output, depth first. */
export function findBlobRef(v: unknown): BlobRef | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o['blob_id'] === 'string' && typeof o['sha256'] === 'string' && typeof o['size'] === 'number') return o as unknown as BlobRef;
  for (const x of Object.values(o)) {
    const r = findBlobRef(x);
    if (r) return r;
  }
  return undefined;
}

/** Says what a replay means: a call_id seen before, whose outcome comes back; whether it ever ran depends on the call. */
function replayNote(startedAt: string | null | undefined): string {
  return say(startedAt ? 'cli.record.replayed_ran' : 'cli.record.replayed_never_ran');
}

/** Prints a call record for people. */
export function printRecord(r: { call_id: string; function: string; state: string; outcome?: { state: string; started_at?: string | null; output?: unknown; output_valid?: boolean; error: { type: string; message: string; details?: unknown } | null; replayed: boolean; duration_ms: number | null } }): void {
  const o = r.outcome;
  if (!o) {
    process.stdout.write(say('cli.record.pending', { function: r.function, call_id: r.call_id, state: r.state }) + '\n');
    return;
  }
  const head = `${o.state === 'completed' && o.output_valid !== false ? '✓' : '✗'} ${o.state}${o.output_valid === false ? ' (output_valid: false)' : ''} ${r.function} call_id=${r.call_id}${o.replayed ? replayNote(o.started_at) : ''}${o.duration_ms !== null ? ` ${o.duration_ms} ms` : ''}`;
  process.stdout.write(head + '\n');
  if (o.error) {
    process.stdout.write(`  ${errorLine(o.error)}\n`);
    // invalid_arguments: its violations are said by printArgumentViolations, in the user's language.
    if (o.error.details && o.error.type !== 'invalid_arguments') process.stdout.write(say('cli.invoke.details', { details: JSON.stringify(o.error.details) }) + '\n');
  }
  if (o.output !== undefined) process.stdout.write(JSON.stringify(o.output, null, 2) + '\n');
}
