/**
 * Third-party adapter code gets the same lifecycle as a built-in handler: `create()` may return
 * `{ functions, dispose }`, and the registry calls dispose when the code is replaced, when the adapter
 * is removed, and when the registry stops (an unsigned adapter in developer mode, real files, real scans).
 * The code runs in its own sandboxed process, so dispose runs there when the process is stopped, and it
 * writes to the one folder it may: its own work folder (its HOME, `<data_dir>/adapter-data/<id>` outside).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdapterRegistry } from '../../src/discovery/registry.js';
import { TrustStore } from '../../src/discovery/trust-store.js';
import { until } from '../helpers/stack.js';

const YAML = `tool:
  id: org.example.lifecycle
  name: Lifecycle example
  version: 1.0.0
entry: index.mjs
capabilities:
  - id: lifecycle.ping
    name: Ping
    permission: public
    input_schema: { type: object, additionalProperties: false }
    output_schema: { type: object }
`;

/** Adapter code whose dispose writes `tag` to `dispose.log` in its work folder. */
function code(tag: string): string {
  return `import fs from 'node:fs';
import path from 'node:path';
export default { name: 'org.example.lifecycle', create: () => ({
  functions: [{ descriptor: { id: 'lifecycle.ping' }, run: async () => ({ tag: ${JSON.stringify(tag)} }) }],
  dispose: () => fs.appendFileSync(path.join(process.env.HOME, 'dispose.log'), ${JSON.stringify(tag + '\n')}),
}) };
`;
}

test('dispose runs when adapter code is replaced, when the adapter is removed, and at stop', async () => {
  const root = mkdtempSync(join(tmpdir(), 'aios-adapter-life-'));
  const dirs = join(root, 'adapters');
  const folder = join(dirs, 'org.example.lifecycle');
  const log = join(root, 'data', 'adapter-data', 'org.example.lifecycle', 'dispose.log');
  const disposed = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'tool.aios.yaml'), YAML);
  writeFileSync(join(folder, 'index.mjs'), code('v1'));
  const reg = new AdapterRegistry({ dirs: [dirs], desktopDirs: [], trust: TrustStore.of([]), dataDir: join(root, 'data'), developerMode: true, inferFromDesktop: false, watch: false });
  try {
    await reg.start();
    assert.deepEqual(reg.functions().map((f) => f.descriptor.id), ['lifecycle.ping'], JSON.stringify(reg.getAdapter('org.example.lifecycle')?.status));
    assert.deepEqual(disposed(), []);
    writeFileSync(join(folder, 'index.mjs'), code('v2'));
    await reg.refresh('local');
    // The replaced code's process is stopped in the background: wait for its dispose.
    await until(() => disposed().length >= 1, 30_000, 'the replaced code\'s dispose');
    assert.deepEqual(disposed(), ['v1'], 'the replaced code was disposed');
    rmSync(folder, { recursive: true });
    await reg.refresh('local');
    assert.equal(reg.functions().length, 0);
    await until(() => disposed().length >= 2, 30_000, 'the removed adapter\'s dispose');
    assert.deepEqual(disposed(), ['v1', 'v2'], 'the removed adapter was disposed');
    mkdirSync(folder);
    writeFileSync(join(folder, 'tool.aios.yaml'), YAML);
    writeFileSync(join(folder, 'index.mjs'), code('v3'));
    await reg.refresh('local');
    assert.equal(reg.functions().length, 1);
    await reg.stop();
    assert.deepEqual(disposed(), ['v1', 'v2', 'v3'], 'stop disposed the loaded code, each instance once');
  } finally {
    await reg.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
