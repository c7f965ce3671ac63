/**
 * Issue #30, permissions for real: permissions.granted lists every grant kind the device's functions need
 * (a kind with nothing shared is named, and its functions are not tested: not run, not required; nothing
 * shared at all fails, trial.test.ts); permissions.denied
 * tries a real file outside every share and a link inside the share that escapes it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { inProcessStack, ids } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { slow } from '../helpers/wait.js';

// The functions of the kinds this machine has nothing to share for are turned off (then not published).
const PRINTER = ['cancel_job', 'get_attributes', 'job_status', 'list', 'list_jobs', 'print', 'print_raw'].map((f) => `printer.${f}`);
const SERIAL = ['get_signals', 'list_ports', 'monitor', 'request', 'set_signals', 'write'].map((f) => `serial.${f}`);
const OTHERS = { media: { enabled: false }, bluetooth: { enabled: false }, diagnostics: { enabled: true } };

async function withShare(disabled: string[], f: (r: Awaited<ReturnType<typeof runTrial>>) => void, only = ['permissions']) {
  const s = await inProcessStack({ agent: { handlers: OTHERS, functions: { disabled } } });
  try {
    const shared = join(s.dir, 'shared');
    mkdirSync(shared);
    s.agent.grants.add('files', { path: shared, access: 'read_write', name: 'Shared' });
    f(await runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only, control: 'local', agentDataDir: join(s.dir, 'agent'), allowEffects: true }));
  } finally {
    await s.stop();
  }
}

test('every needed kind granted: both checks pass, the link escaping the share is refused', { timeout: slow(120_000) }, async () => {
  await withShare([...PRINTER, ...SERIAL], (r) => {
    const g = r.checks.find((c) => c.id === 'permissions.granted')!;
    assert.equal(g.verdict, 'pass', g.message);
    assert.match(g.message, /files: granted/);
    const d = r.checks.find((c) => c.id === 'permissions.denied')!;
    assert.equal(d.verdict, 'pass', d.message);
    assert.match(d.message, /real file outside every share and for a link escaping the share/);
    assert.equal(d.evidence.length, 2);
  });
});

test('serial functions published with no port shared: permissions.granted names serial as not granted, and the serial functions are not tested (not run, not required), never passed', { timeout: slow(120_000) }, async () => {
  await withShare(
    PRINTER,
    (r) => {
      const g = r.checks.find((c) => c.id === 'permissions.granted')!;
      assert.equal(g.verdict, 'pass', g.message);
      assert.match(g.message, /serial: not granted/);
      assert.match(g.message, /files: granted/);
      assert.match(g.message, /Nothing is shared for serial: those functions were not tested/);
      const monitor = r.checks.find((c) => c.id === 'contract.serial.monitor')!;
      assert.equal(monitor.verdict, 'not_run', monitor.message);
      assert.equal(monitor.required, false);
      assert.match(monitor.message, /nothing is shared for serial on this device/);
      assert.ok(!r.summary.required_failed.some((id) => id.startsWith('contract.serial.')), r.summary.required_failed.join(', '));
      // A function of that kind that needs no grant still runs and is validated.
      assert.equal(r.checks.find((c) => c.id === 'contract.serial.list_ports')?.verdict, 'pass');
    },
    ['permissions', 'contract.serial'],
  );
});
