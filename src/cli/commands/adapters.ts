/**
 * CLI for adapter authors and users: `adapter validate|sign|verify|keygen`, `adapters add|remove|list`,
 * `keys import|list`. Commands that change what the agent runs go through the running agent's local
 * endpoint when there is one, so the change applies at once; otherwise they write the data directory.
 */
import { writeFile, readFile } from 'node:fs/promises';
import { say, sayError } from '../say.js';
import path from 'node:path';
import type { Command } from 'commander';
import { exportJWK, generateKeyPair } from 'jose';
import { configOf, dataDirOf, withDirOptions as withDataDirOptions, type DirOpts } from '../data-dir.js';
import { callLocal, findRunningAgent } from '../../endpoint/local-client.js';
import { AdapterRegistry } from '../../discovery/registry.js';
import { REGISTRY_METHODS } from '../../discovery/registry-methods.js';
import { fetchRemoteCard } from '../../discovery/remote-adapter.js';
import { importedKeysFile, parseJwks, TrustStore } from '../../discovery/trust-store.js';
import { loadSigningKeyFile, signAdapterDir, validateAdapterDir, verifyAdapterDir } from '../../discovery/adapter-tools.js';
import { CARD_ALGORITHMS, type CardAlgorithm } from '../../protocol/card-sign.js';
import { isProblemMessage, renderProblem } from '../../discovery/adapter-problem.js';
import { localeFromEnv } from '../../i18n/index.js';
import { RpcError } from '../../protocol/errors.js';
import { AdapterApprovals, approvalsFile } from '../../discovery/adapter-approvals.js';
import type { PendingAdapter } from '../../discovery/adapter-entry.js';
import type { PendingFunction } from '../../discovery/local-adapter.js';
import type { PermissionLevel } from '../../protocol/messages.js';
import { AdapterProblem, type ProblemMessage } from '../../discovery/adapter-problem.js';

async function trustOf(o: DirOpts & { trust?: string[] }): Promise<TrustStore> {
  if (o.trust?.length) {
    const keys = [];
    for (const f of o.trust) keys.push(...parseJwks(JSON.parse(await readFile(f, 'utf8'))));
    return TrustStore.of(keys);
  }
  return TrustStore.load({ files: configOf(o)?.trust?.keys ?? [], importedFile: importedKeysFile(dataDirOf(o)) });
}

const withDirOptions = (c: Command): Command => withDataDirOptions(c, 'data_dir, adapters and trust');

/**
 * The local adapters as an agent with this config would see them, for when no agent runs: the same
 * folders, trust and approvals (the admin config's and the person's file). `start()` loads what is approved.
 */
async function offlineRegistry(o: DirOpts): Promise<AdapterRegistry> {
  const cfg = configOf(o);
  const dataDir = dataDirOf(o);
  return new AdapterRegistry({
    ...(cfg?.adapters?.dirs && { dirs: cfg.adapters.dirs }),
    developerMode: cfg?.adapters?.developer_mode === true,
    allowUnsandboxed: cfg?.adapters?.unsandboxed === 'allow',
    approvals: new AdapterApprovals({ file: approvalsFile(dataDir), admin: cfg?.adapters?.approved }),
    trust: await trustOf(o),
    dataDir,
    watch: false,
    inferFromDesktop: false,
  });
}

const LEVEL_NAMES: readonly PermissionLevel[] = ['public', 'low', 'medium', 'high', 'critical'];

/** `--level <fn>=<level>` options as a map; a malformed one is an error naming it. */
function parseLevels(args: string[]): Record<string, PermissionLevel> {
  const out: Record<string, PermissionLevel> = {};
  for (const arg of args) {
    const m = /^([^=\s]+)=([a-z]+)$/.exec(arg);
    if (!m || !LEVEL_NAMES.includes(m[2] as PermissionLevel)) throw new AdapterProblem('core.adapter.level_bad', { arg });
    out[m[1]!] = m[2] as PermissionLevel;
  }
  return out;
}

/** What a risk says, in the user's words ("read-only", "destructive"…); none declared means destructive. */
function riskWords(risk: PendingFunction['risk']): string {
  if (!risk) return say('cli.adapter.pending_risk_unknown');
  const words: string[] = [];
  if (risk.read_only) words.push(say('cli.adapter.pending_read_only'));
  if (risk.destructive !== false && !risk.read_only) words.push(say('cli.adapter.pending_destructive'));
  if (risk.idempotent) words.push(say('cli.adapter.pending_idempotent'));
  if (risk.physical) words.push(say('cli.adapter.pending_physical'));
  return words.join(', ');
}

/**
 * An adapter problem in the user's language: from its catalogue message when it has one (also when it came
 * back from a running agent as data), else the English text it carries.
 */
function tell(said: unknown, english: string): string {
  return isProblemMessage(said) ? renderProblem(said, localeFromEnv(), english) : english;
}

/**
 * An error's sentence in the user's language: a running agent's RPC error by the `reason_message` its data
 * carries, anything else as the CLI says any error (adapter problems and catalogue messages included).
 */
function tellError(e: unknown): string {
  if (e instanceof RpcError) return tell((e.data as { reason_message?: unknown } | undefined)?.reason_message, e.message);
  return sayError(e);
}

function fail(msg: string): never {
  process.stderr.write(`${msg}\n`);
  process.exit(1);
}

async function readCa(file: string | undefined): Promise<Buffer | undefined> {
  return file ? readFile(file) : undefined;
}

/** Registers `adapter …`, `adapters …` and `keys …` on the program. */
export function registerAdapterCommands(program: Command): void {
  const adapter = program.command('adapter').description(say('cli.help.adapter'));

  adapter
    .command('validate <dir>')
    .description(say('cli.help.adapter.validate'))
    .action(async (dir: string) => {
      const problems = await validateAdapterDir(dir);
      if (problems.length) fail(problems.map((p) => `✗ ${tellError(p)}`).join('\n'));
      process.stdout.write(say('cli.adapter.valid', { dir }) + '\n');
    });

  adapter
    .command('keygen <private-jwk-file>')
    .description(say('cli.help.adapter.keygen'))
    .requiredOption('--kid <kid>', say('cli.help.adapter.keygen.kid'))
    .option('--alg <alg>', say('cli.help.adapter.keygen.alg', { algs: CARD_ALGORITHMS.join(', ') }), 'ES256')
    .action(async (file: string, o: { kid: string; alg: string }) => {
      if (!CARD_ALGORITHMS.includes(o.alg as CardAlgorithm)) fail(say('cli.adapter.alg', { algs: CARD_ALGORITHMS.join(', ') }));
      const { privateKey, publicKey } = await generateKeyPair(o.alg, { extractable: true });
      const meta = { kid: o.kid, alg: o.alg };
      await writeFile(file, JSON.stringify({ ...(await exportJWK(privateKey)), ...meta }, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
      const pub = file.replace(/(\.private)?(\.jwk)?\.json$/, '') + '.jwks';
      await writeFile(pub, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), ...meta, use: 'sig' }] }, null, 2) + '\n');
      process.stdout.write(say('cli.adapter.keygen', { file, pub, pub_name: path.basename(pub) }) + '\n');
    });

  adapter
    .command('sign <dir>')
    .description(say('cli.help.adapter.sign'))
    .requiredOption('--key <private-jwk-file>', say('cli.help.adapter.sign.key'))
    .option('--kid <kid>', say('cli.help.adapter.sign.kid'))
    .action(async (dir: string, o: { key: string; kid?: string }) => {
      // Signing again is how a folder whose code changed since its last signature is fixed.
      const problems = (await validateAdapterDir(dir)).filter((p) => p.said.key !== 'core.adapter.binding_mismatch');
      if (problems.length) fail(problems.map((p) => `✗ ${tellError(p)}`).join('\n'));
      let card;
      try {
        card = await signAdapterDir(dir, await loadSigningKeyFile(o.key, o.kid));
      } catch (e) {
        fail(`✗ ${tellError(e)}`);
      }
      process.stdout.write(say('cli.adapter.signed', { id: card.adapter.id, version: card.adapter.version, kid: card.signature?.key_id ?? '', count: Object.keys(card.code?.files ?? {}).length }) + '\n');
    });

  withDirOptions(
    adapter
      .command('verify <dir-or-url>')
      .description(say('cli.help.adapter.verify'))
      .option('--trust <jwks...>', say('cli.help.adapter.verify.trust'))
      .option('--ca <pem>', say('cli.help.opt.ca')),
  ).action(async (target: string, o: DirOpts & { trust?: string[]; ca?: string }) => {
    const trust = await trustOf(o);
    try {
      if (/^https?:\/\//.test(target)) {
        const r = await fetchRemoteCard(target, { trust, ca: await readCa(o.ca) });
        process.stdout.write(say('cli.adapter.verified_remote', { id: r.card.adapter.id, version: r.card.adapter.version, kid: r.kid, source: r.keySource, skills: r.card.skills.length, url: r.rpcUrl }) + '\n');
      } else {
        const r = await verifyAdapterDir(target, trust);
        process.stdout.write(say('cli.adapter.verified_local', { id: r.card.adapter.id, version: r.card.adapter.version, kid: r.kid }) + '\n');
      }
    } catch (e) {
      fail(`✗ ${tellError(e)}`);
    }
  });

  const adapters = program.command('adapters').description(say('cli.help.adapters'));

  withDirOptions(adapters.command('add <https-url>').description(say('cli.help.adapters.add')).option('--ca <pem>', say('cli.help.opt.ca'))).action(
    async (url: string, o: DirOpts & { ca?: string }) => {
      const dataDir = dataDirOf(o);
      const agent = await findRunningAgent(dataDir);
      try {
        // The CA travels with the adapter's record: the running agent (and every later start) uses it for this origin.
        const ca = (await readCa(o.ca))?.toString('utf8');
        if (agent) {
          const info = (await callLocal(agent, REGISTRY_METHODS.addRemote, { url, ...(ca ? { ca } : {}) })) as { adapter: { id: string }; status: { available: boolean; reason?: string } };
          const reason = tell((info.status as { reason_message?: unknown }).reason_message, String(info.status.reason));
          process.stdout.write(say('cli.adapter.added_running', { id: info.adapter.id, status: info.status.available ? say('cli.adapter.available') : say('cli.adapter.unavailable', { reason }) }) + '\n');
          return;
        }
        const reg = new AdapterRegistry({ dirs: [], desktopDirs: [], trust: await trustOf(o), dataDir, watch: false, inferFromDesktop: false });
        const e = await reg.addRemote(url, ca);
        process.stdout.write(say('cli.adapter.added_stopped', { id: e.id, skills: e.card.skills.length, dir: dataDir }) + '\n');
      } catch (e) {
        fail(`✗ ${tellError(e)}`);
      }
    },
  );

  withDirOptions(adapters.command('refresh').description(say('cli.help.adapters.refresh'))).action(async (o: DirOpts) => {
    const dataDir = dataDirOf(o);
    const agent = await findRunningAgent(dataDir);
    if (!agent) fail(say('cli.adapter.no_agent_rescan', { dir: dataDir }));
    const c = (await callLocal(agent, REGISTRY_METHODS.refresh, { scope: 'all' }, 60_000)) as { added: unknown[]; removed: unknown[]; updated: unknown[] };
    process.stdout.write(say('cli.adapter.rescanned', { added: c.added.length, removed: c.removed.length, updated: c.updated.length }) + '\n');
  });

  withDirOptions(adapters.command('remove <adapter-id>').description(say('cli.help.adapters.remove'))).action(async (id: string, o: DirOpts) => {
    const dataDir = dataDirOf(o);
    const agent = await findRunningAgent(dataDir);
    const removed = agent
      ? ((await callLocal(agent, REGISTRY_METHODS.removeRemote, { adapter_id: id })) as { removed: boolean }).removed
      : await new AdapterRegistry({ dirs: [], desktopDirs: [], trust: TrustStore.of([]), dataDir, watch: false, inferFromDesktop: false }).removeRemote(id);
    if (!removed) fail(say('cli.adapter.no_remote', { id }));
    process.stdout.write(say('cli.adapter.removed', { id }) + '\n');
  });

  withDirOptions(adapters.command('list').description(say('cli.help.adapters.list')).option('--json', say('cli.help.opt.json'))).action(async (o: DirOpts & { json?: boolean }) => {
    const dataDir = dataDirOf(o);
    const agent = await findRunningAgent(dataDir);
    let rows: { id: string; name: string; version: string; skills_count: number; status: string; reason?: string; warning?: string }[];
    // The catalogue messages of reasons and warnings, by adapter id: shown in the user's language, kept out of --json (English, as the wire says it).
    const said = new Map<string, { reason?: unknown; warning?: unknown }>();
    if (agent) {
      const res = (await callLocal(agent, REGISTRY_METHODS.search, { limit: 1000 })) as { adapters: { id: string; name: string; version: string; skills_count: number; status: string }[] };
      rows = [];
      for (const a of res.adapters) {
        const info = (await callLocal(agent, REGISTRY_METHODS.info, { adapter_id: a.id })) as { status: { reason?: string; warning?: string; reason_message?: unknown; warning_message?: unknown } };
        rows.push({ ...a, ...(info.status.reason && { reason: info.status.reason }), ...(info.status.warning && { warning: info.status.warning }) });
        said.set(a.id, { reason: info.status.reason_message, warning: info.status.warning_message });
      }
    } else {
      const reg = await offlineRegistry(o);
      await reg.start();
      // Remote adapters are fetched in the background; the listing waits for them (or their failure).
      await reg.remoteReady;
      rows = reg.listAdapters().map((e) => {
        said.set(e.id, { reason: e.status.reason_message, warning: e.status.warning_message });
        return {
          id: e.id, name: e.card.adapter.name, version: e.card.adapter.version, skills_count: e.card.skills.length,
          status: e.status.available ? 'available' : 'unavailable',
          ...(e.status.reason && { reason: e.status.reason }), ...(e.status.warning && { warning: e.status.warning }),
        };
      });
      await reg.stop();
    }
    if (o.json) {
      process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
      return;
    }
    if (!rows.length) process.stdout.write(say('cli.adapter.none') + '\n');
    for (const r of rows) {
      process.stdout.write(say('cli.adapter.row', { mark: r.status === 'available' ? '✓' : '✗', id: r.id, version: r.version, name: r.name, skills: r.skills_count }) + '\n');
      if (r.warning) process.stdout.write(`    ⚠ ${tell(said.get(r.id)?.warning, r.warning)}\n`);
      if (r.reason) process.stdout.write(`    ${tell(said.get(r.id)?.reason, r.reason)}\n`);
    }
  });

  withDirOptions(adapters.command('pending').description(say('cli.help.adapters.pending')).option('--json', say('cli.help.opt.json'))).action(async (o: DirOpts & { json?: boolean }) => {
    const dataDir = dataDirOf(o);
    const agent = await findRunningAgent(dataDir);
    type PendingAnswer = { adapters: PendingAdapter[]; approvals_problem?: string; approvals_problem_message?: ProblemMessage };
    // The same registry method answers, from the running agent or from a registry started here.
    let res: PendingAnswer;
    if (agent) res = (await callLocal(agent, REGISTRY_METHODS.pending, {})) as PendingAnswer;
    else {
      const reg = await offlineRegistry(o);
      await reg.start();
      try {
        res = (await reg.registryMethods()[REGISTRY_METHODS.pending]!({}, { authenticated: true })) as PendingAnswer;
      } finally {
        await reg.stop();
      }
    }
    const list = res.adapters;
    const fileProblem = res.approvals_problem ? { english: res.approvals_problem, said: res.approvals_problem_message } : undefined;
    if (fileProblem) process.stderr.write(`✗ ${tell(fileProblem.said, fileProblem.english)}\n`);
    if (o.json) {
      process.stdout.write(JSON.stringify(list, null, 2) + '\n');
      return;
    }
    if (!list.length) process.stdout.write(say('cli.adapter.pending_none') + '\n');
    for (const a of list) {
      process.stdout.write(say('cli.adapter.pending_row', { id: a.id, version: a.version, name: a.name }) + '\n');
      process.stdout.write(`    ${say('cli.adapter.pending_folder', { dir: a.folder })}\n`);
      process.stdout.write(`    ${a.signer ? say('cli.adapter.pending_signer', { kid: a.signer }) : say('cli.adapter.pending_unsigned')}\n`);
      if (!a.functions) process.stdout.write(`    ${say('cli.adapter.pending_tools_unknown')}\n`);
      for (const f of a.functions ?? []) {
        process.stdout.write(`    ${say('cli.adapter.pending_function', { fn: f.id, name: f.name, level: f.claimed_level ?? '-', risk: riskWords(f.risk) })}\n`);
      }
      process.stdout.write(`    ${say('cli.adapter.pending_how', { id: a.id })}\n`);
    }
  });

  withDirOptions(
    adapters
      .command('approve <adapter-id>')
      .description(say('cli.help.adapters.approve'))
      .option('--level <fn=level>', say('cli.help.adapters.approve.level'), (v: string, prev: string[] = []) => [...prev, v]),
  ).action(async (id: string, o: DirOpts & { level?: string[] }) => {
    const dataDir = dataDirOf(o);
    try {
      const levels = parseLevels(o.level ?? []);
      const agent = await findRunningAgent(dataDir);
      if (agent) {
        const info = (await callLocal(agent, REGISTRY_METHODS.approve, { adapter_id: id, levels }, 60_000)) as { skills: unknown[]; status: { available: boolean; reason?: string; reason_message?: unknown } };
        const status = info.status.available ? say('cli.adapter.available') : say('cli.adapter.unavailable', { reason: tell(info.status.reason_message, String(info.status.reason)) });
        process.stdout.write(say('cli.adapter.approved_running', { id, status, skills: info.skills.length }) + '\n');
        return;
      }
      const reg = await offlineRegistry(o);
      try {
        await reg.start();
        await reg.approve(id, levels, { rescan: false });
      } finally {
        await reg.stop();
      }
      process.stdout.write(say('cli.adapter.approved_stopped', { id, dir: dataDir }) + '\n');
    } catch (e) {
      fail(`✗ ${tellError(e)}`);
    }
  });

  const keys = program.command('keys').description(say('cli.help.keys'));
  withDirOptions(keys.command('import <jwks-file>').description(say('cli.help.keys.import'))).action(async (file: string, o: DirOpts) => {
    try {
      const trust = await TrustStore.load({ files: configOf(o)?.trust?.keys ?? [], importedFile: importedKeysFile(dataDirOf(o)) });
      const added = await trust.importJwks(JSON.parse(await readFile(file, 'utf8')));
      process.stdout.write((added.length ? say('cli.adapter.trusting', { kids: added.join(', ') }) : say('cli.adapter.already_trusted')) + '\n');
      // The running agent reads the imported keys again and rescans, so adapters signed with them load now.
      const agent = await findRunningAgent(dataDirOf(o));
      if (agent && added.length) {
        await callLocal(agent, REGISTRY_METHODS.refresh, { scope: 'all' }, 60_000);
        process.stdout.write(say('cli.adapter.rescanned_keys') + '\n');
      }
    } catch (e) {
      fail(`✗ ${tellError(e)}`);
    }
  });
  withDirOptions(keys.command('list').description(say('cli.help.keys.list'))).action(async (o: DirOpts) => {
    const trust = await trustOf(o);
    for (const k of trust.list()) process.stdout.write(`${k.kid}  ${k.kty}  ${k.source}\n`);
  });
}
