/**
 * Issue #30, contract: a check passes only when a valid call completed and the trial validated its output;
 * each files function gets a fresh fixture of its own in a scratch share under the agent's temp folder;
 * a call that ended without output is inconclusive; an output that breaks its schema or misses a field fails.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inProcessStack, ids, tempDir, until, ROOT } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { slow } from '../helpers/wait.js';

const FILES = ['copy', 'delete', 'list_dir', 'mkdir', 'move', 'read_bytes', 'read_text', 'search', 'stat', 'write_bytes', 'write_text'].map((f) => `contract.files.${f}`);

test('every files function passes on a fixture of its own in a scratch share under the agent\'s temp folder, removed afterwards; no output is inconclusive', { timeout: slow(300_000) }, async () => {
  const s = await inProcessStack({});
  try {
    const agentDir = join(s.dir, 'agent');
    const r = await runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['contract'], control: 'local', agentDataDir: agentDir, unattended: true, allowEffects: true });
    const by = new Map(r.checks.map((c) => [c.id, c]));
    for (const id of FILES) assert.equal(by.get(id)?.verdict, 'pass', `${id}: ${by.get(id)?.message}`);
    for (const id of FILES) assert.equal(by.get(id)?.output_validated, true, id);
    // A function whose kind of resource has nothing shared ends permission_denied: nothing was validated, so it
    // is not a pass; it is not run (not required: sharing a printer is the user's choice), and says how to test it.
    const printer = by.get('contract.printer.get_attributes')!;
    assert.equal(printer.verdict, 'not_run', printer.message);
    assert.equal(printer.required, false);
    assert.match(printer.message, /permission_denied.*grants\.printers/);
    assert.ok(!r.summary.required_failed.includes('contract.printer.get_attributes'));
    // A function with effects the trial has no scratch resource for is never called, and not required.
    const notify = by.get('contract.device.notify')!;
    assert.equal(notify.verdict, 'not_run', notify.message);
    assert.equal(notify.required, false);
    const { validated, functions } = r.summary.outputs_validated;
    assert.equal(functions, r.checks.filter((c) => c.id.startsWith('contract.')).length);
    assert.equal(validated, r.checks.filter((c) => c.output_validated).length);
    assert.ok(validated >= FILES.length + 3 && validated < functions, `${validated} of ${functions}`);
    assert.ok(r.scratch && 'root' in r.scratch, JSON.stringify(r.scratch));
    assert.ok(r.scratch.dir.startsWith(join(agentDir, 'tmp')), r.scratch.dir);
    assert.ok(!existsSync(r.scratch.dir), 'the scratch folder is gone');
    assert.ok(!JSON.stringify(s.agent.grants.list('files')).includes(r.scratch.root), 'the scratch grant is gone');
  } finally {
    await s.stop();
  }
});

test('where the admin ceiling forbids a scratch share, the files checks are not_run and say why', { timeout: slow(300_000) }, async () => {
  const s = await inProcessStack({ agent: { grants: { files: [] } } });
  try {
    const r = await runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['contract.files'], control: 'local', agentDataDir: join(s.dir, 'agent'), unattended: true, allowEffects: true });
    for (const id of FILES) {
      const c = r.checks.find((x) => x.id === id)!;
      assert.equal(c.verdict, 'not_run', `${id}: ${c.message}`);
      assert.match(c.message, /scratch share/);
    }
    assert.ok(r.scratch && 'problem' in r.scratch);
  } finally {
    await s.stop();
  }
});

test('an output that breaks its schema or misses a required field fails its contract check; a healthy one passes', { timeout: slow(300_000) }, async () => {
  const dir = tempDir();
  const adapters = join(dir, 'adapters');
  mkdirSync(adapters, { recursive: true });
  // Three copies of the example adapter under other names: one healthy, one missing its output field, one of the wrong type.
  const adapter = (name: string, output: string) => {
    const d = join(adapters, `org.example.${name}`);
    cpSync(join(ROOT, 'examples/hello-adapter/org.example.hello'), d, { recursive: true });
    rmSync(join(d, 'adapter.json'));
    const yaml = readFileSync(join(d, 'tool.aios.yaml'), 'utf8').replaceAll('org.example.hello', `org.example.${name}`).replaceAll('hello.greet', `${name}.greet`);
    writeFileSync(join(d, 'tool.aios.yaml'), yaml);
    writeFileSync(join(d, 'index.mjs'), `export default { name: 'org.example.${name}', create: () => [{ descriptor: { id: '${name}.greet' }, run: async () => (${output}) }] };\n`);
  };
  adapter('healthy', '{ greeting: "hi" }');
  adapter('missing', '{}');
  adapter('badtype', '{ greeting: 42 }');
  // Third-party functions are asked at level high unless someone lowered it (issue 35): the admin lowers these
  // three, so the contract check calls them without a prompt.
  const approved = Object.fromEntries(['healthy', 'missing', 'badtype'].map((n) => [`org.example.${n}`, { levels: { [`${n}.greet`]: 'public' } }]));
  const s = await inProcessStack({ agent: { adapters: { dirs: [adapters], developer_mode: true, approved } } });
  try {
    const fns = async () => ((await s.client.device(ids.device_id))['functions'] as { id: string }[]).map((f) => f.id);
    await until(async () => { const l = await fns(); return ['healthy.greet', 'missing.greet', 'badtype.greet'].every((id) => l.includes(id)); }, 20_000, 'the adapters are published');
    const r = await runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['contract.healthy', 'contract.missing', 'contract.badtype'] });
    const v = (id: string) => r.checks.find((c) => c.id === id)!;
    assert.equal(v('contract.healthy.greet').verdict, 'pass', v('contract.healthy.greet').message);
    assert.equal(v('contract.missing.greet').verdict, 'fail', v('contract.missing.greet').message);
    assert.match(v('contract.missing.greet').message, /output .*greeting/);
    assert.equal(v('contract.badtype.greet').verdict, 'fail', v('contract.badtype.greet').message);
    assert.match(v('contract.badtype.greet').message, /output \/greeting/);
    assert.deepEqual(r.summary.outputs_validated, { validated: 3, functions: 3 });
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
