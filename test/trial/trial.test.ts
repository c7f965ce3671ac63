/**
 * `aios-device trial` against a CLI-started bridge and agent: a full pass, then faults planted on purpose,
 * each of which must fail exactly its own check with a clear message.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processStack, cliRun, cli, tempDir, tokens, bridgeDoc, agentDoc, ids, until, ROOT } from '../helpers/stack.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import type { TrialReport } from '../../src/trial/types.js';
import { slow } from '../helpers/wait.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

async function trial(s: { dir: string; url: string; tokens: { runtime: string } }, extra: string[] = []): Promise<{ code: number | null; report: TrialReport; out: string; err: string }> {
  const tokenFile = join(s.dir, 'runtime-token');
  writeFileSync(tokenFile, s.tokens.runtime, { mode: 0o600 });
  const json = join(s.dir, `trial-${Date.now()}.json`);
  const html = json.replace(/\.json$/, '.html');
  const r = await cliRun(['trial', '--bridge', s.url, '--runtime-token-file', tokenFile, '--workspace', ids.workspace_id, '--device', ids.device_id, '--json', json, '--report', html, ...extra]);
  assert.ok(existsSync(json), `no JSON report; stderr: ${r.err}`);
  const report = JSON.parse(readFileSync(json, 'utf8')) as TrialReport;
  const page = readFileSync(html, 'utf8');
  assert.match(page, /^<!doctype html>/);
  assert.doesNotMatch(page, /<(script|link|img)[^>]+(src|href)=["']?https?:/i, 'the report is self-contained');
  return { code: r.code, report, out: r.out, err: r.err };
}

const failed = (r: TrialReport) => [...new Set(r.checks.filter((c) => c.verdict === 'fail').map((c) => c.id))];
const unattended = (s: Stack) => ['--control', 'local', '--agent-data-dir', join(s.dir, 'agent'), '--unattended', '--expect-workspace', ids.workspace_id, '--expect-user', ids.user_id];
// This machine has no printer, serial port, camera, microphone, screen grant or Bluetooth to share: those
// functions are turned off (so not published), as a QA engineer would for a files-only device.
const PRINTER = ['cancel_job', 'get_attributes', 'job_status', 'list', 'list_jobs', 'print', 'print_raw'].map((f) => `printer.${f}`);
const SERIAL = ['get_signals', 'list_ports', 'monitor', 'request', 'set_signals', 'write'].map((f) => `serial.${f}`);
const filesOnly = { handlers: { diagnostics: { enabled: true }, media: { enabled: false }, bluetooth: { enabled: false } }, functions: { disabled: [...PRINTER, ...SERIAL, 'device.notify'] } };

function sharedFolder(dir: string): string {
  const p = join(dir, 'shared');
  mkdirSync(p, { recursive: true });
  writeFileSync(join(p, 'hello.txt'), 'hello\n');
  return p;
}

test('a healthy device passes the whole trial with --allow-effects; without it the files checks are not run and fail the run; a broken handler fails exactly its contract check', { timeout: slow(600_000) }, async () => {
  const dir = tempDir();
  const adapters = join(dir, 'adapters');
  mkdirSync(adapters, { recursive: true });
  const s = await processStack({ agent: { ...filesOnly, grants: { files: [{ path: sharedFolder(dir), access: 'read_write', name: 'Shared' }] }, adapters: { dirs: [adapters], developer_mode: true, approved: { 'org.example.hello': {} } } } });
  try {
    // Functions with side effects (and files functions, which need a fixture of their own) are called only
    // in a scratch share the run makes and removes afterwards (here inside the user's writable share: the
    // admin's files grant is a ceiling).
    const r = await trial(s, [...unattended(s), '--allow-effects']);
    assert.deepEqual(failed(r.report), [], r.out);
    assert.deepEqual(r.report.summary.required_failed, [], r.out);
    assert.equal(r.report.ok, true, r.out);
    assert.equal(r.code, 0, r.out + r.err);
    const byId = new Map(r.report.checks.map((c) => [c.id, c]));
    for (const id of ['client.version', 'identity', 'permissions.granted', 'permissions.denied', 'faults.device_offline', 'faults.bridge_unreachable', 'faults.timeout', 'extra.duplicate', 'extra.cancel', 'extra.reconnect', 'contract.device.info', 'contract.diagnostics.echo', 'contract.files.write_text', 'contract.files.mkdir', 'contract.files.delete', 'contract.files.read_text']) {
      assert.equal(byId.get(id)?.verdict, 'pass', `${id}: ${byId.get(id)?.message}`);
      assert.ok(byId.get(id)!.evidence.length > 0, `${id} recorded evidence`);
    }
    assert.equal(byId.get('confirm.high_risk')?.verdict, 'simulated');
    assert.match(byId.get('confirm.high_risk')!.message, /answered by the trial, not a person/, 'the report says the prompt was answered unattended');
    assert.equal(byId.get('extra.client_outdated')?.verdict, 'not_run', 'a check needing control the trial lacks is not run, never passed');
    assert.equal(r.report.lines.find((l) => l.line === '6')?.verdict, 'simulated');
    assert.match(r.out, /functions whose output was validated: \d+ of \d+/);
    assert.deepEqual(readdirSync(join(dir, 'shared')).filter((n) => n.startsWith('aios-trial-scratch-')), [], 'the scratch folder is gone');
    const grantsLeft = (await cliRun(['grants', '--data-dir', join(s.dir, 'agent')])).out;
    assert.doesNotMatch(grantsLeft, /aios-trial-/, 'the scratch grant is gone');

    // Without --allow-effects the files functions get no fixture: not run, naming the flag, and the run fails.
    const plain = await trial(s, unattended(s));
    assert.deepEqual(failed(plain.report), [], plain.out);
    assert.equal(plain.code, 1);
    assert.ok(plain.report.summary.required_failed.length > 0 && plain.report.summary.required_failed.every((id) => id.startsWith('contract.files.')), plain.out);
    assert.match(plain.report.checks.find((c) => c.id === 'contract.files.read_text')!.message, /--allow-effects/);

    // A handler whose output misses a required field: copy the example adapter and break its output.
    const broken = join(adapters, 'org.example.hello');
    cpSync(join(ROOT, 'examples/hello-adapter/org.example.hello'), broken, { recursive: true });
    rmSync(join(broken, 'adapter.json'));
    writeFileSync(join(broken, 'index.mjs'), "export default { name: 'org.example.hello', create: () => [{ descriptor: { id: 'hello.greet' }, run: async () => ({}) }] };\n");
    await until(async () => ((await s.client.device(ids.device_id))['functions'] as { id: string }[]).some((f) => f.id === 'hello.greet'), 20_000, 'the broken adapter is published');
    const b = await trial(s, [...unattended(s), '--allow-effects']);
    assert.deepEqual(failed(b.report), ['contract.hello.greet'], b.out);
    assert.match(b.report.checks.find((c) => c.id === 'contract.hello.greet')!.message, /output .*greeting/);
    assert.equal(b.code, 1);
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no shared folder fails exactly permissions.granted; a prompt that never comes fails exactly confirm.high_risk', { timeout: slow(600_000) }, async () => {
  const noShare = await processStack({ agent: filesOnly });
  try {
    const r = await trial(noShare, unattended(noShare));
    assert.deepEqual(failed(r.report), ['permissions.granted'], r.out);
    assert.match(r.report.checks.find((c) => c.id === 'permissions.granted')!.message, /files: not granted/);
    assert.equal(r.code, 1);
  } finally {
    await noShare.stop();
  }
  const dir = tempDir();
  const noPrompt = await processStack({ agent: { ...filesOnly, grants: { files: [{ path: sharedFolder(dir), access: 'read', name: 'Shared' }] }, confirmations: { provider: 'none' } } });
  try {
    const r = await trial(noPrompt, unattended(noPrompt));
    assert.deepEqual(failed(r.report), ['confirm.high_risk'], r.out);
    assert.match(r.report.checks.find((c) => c.id === 'confirm.high_risk')!.message, /no prompt appeared/);
  } finally {
    await noPrompt.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a device below the bridge\'s minimum version fails client.version with client_outdated; nothing else is passed', { timeout: slow(600_000) }, async () => {
  const dir = tempDir();
  const t = tokens();
  mkdirSync(join(dir, 'bridge'), { recursive: true, mode: 0o700 }); // a data folder others can read is refused
  const bcfg = join(dir, 'bridge.cfg.json');
  writeFileSync(bcfg, JSON.stringify(bridgeDoc(dir, t, { min_client_version: '99.0.0' })));
  const bridge = cli(['bridge', '--config', bcfg]);
  let agent: ReturnType<typeof cli> | undefined;
  try {
    const bridgeFile = join(dir, 'bridge', 'bridge.json');
    await until(() => existsSync(bridgeFile), 20_000, 'bridge.json');
    const url = (JSON.parse(readFileSync(bridgeFile, 'utf8')) as { url: string }).url;
    const acfg = join(dir, 'agent.cfg.json');
    writeFileSync(acfg, JSON.stringify(agentDoc(dir, url, t)));
    agent = cli(['run', '--config', acfg]);
    const client = new RuntimeClient({ bridge_url: url, token: t.runtime, workspace_id: ids.workspace_id });
    await until(async () => (await client.device(ids.device_id).catch(() => ({}) as Record<string, unknown>))['last_refused_hello'], 30_000, 'the refused hello is recorded');
    const r = await trial({ dir, url, tokens: t });
    assert.deepEqual(failed(r.report), ['client.version'], r.out);
    assert.match(r.report.checks.find((c) => c.id === 'client.version')!.message, /client_outdated.*99\.0\.0/);
    assert.ok(!r.report.checks.some((c) => c.verdict === 'pass' && c.id.startsWith('contract')), 'no contract check passes on a device that is not there');
    assert.equal(r.code, 1);
  } finally {
    await agent?.kill('SIGKILL');
    await bridge.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
