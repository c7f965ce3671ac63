/**
 * Which Node.js and which copy of the host run a JavaScript adapter (src/discovery/host-runtime.ts): the
 * agent's own node from a checkout; in the tray app (Electron, whose packaged binary cannot run as Node) a
 * Node.js 20+ of the machine's (AIOS_ADAPTER_NODE, else node on PATH) and the bundle in
 * <resources>/adapter-host, or a typed reason when there is none. Real executables: this Node through a
 * link, and a script that claims to be Node 18.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADAPTER_HOST_DIR, hostRuntime } from '../../src/discovery/host-runtime.js';
import { AdapterProblem, renderProblem } from '../../src/discovery/adapter-problem.js';
import { PROJECT_ROOT } from '../../src/version.js';

let root: string;
let realNodeDir: string;
let oldNodeDir: string;
let resources: string;

before(() => {
  root = mkdtempSync(join(tmpdir(), 'aios-host-runtime-'));
  realNodeDir = join(root, 'real');
  oldNodeDir = join(root, 'old');
  resources = join(root, 'resources');
  mkdirSync(realNodeDir);
  mkdirSync(oldNodeDir);
  mkdirSync(join(resources, 'adapter-host'), { recursive: true });
  symlinkSync(process.execPath, join(realNodeDir, 'node'));
  writeFileSync(join(oldNodeDir, 'node'), '#!/bin/sh\necho v18.19.0\n');
  chmodSync(join(oldNodeDir, 'node'), 0o755);
  writeFileSync(join(resources, 'adapter-host', 'host.mjs'), '// the bundle\n');
});
after(() => rmSync(root, { recursive: true, force: true }));

const refusal = (detail: RegExp) => (e: unknown) => e instanceof AdapterProblem && e.said.key === 'core.adapter.no_host_node' && detail.test(renderProblem(e.said, 'en'));

test('plain Node (the CLI, a checkout): this node, the host beside the project node_modules', async () => {
  assert.deepEqual(await hostRuntime({ electron: false, env: {} }), { node: process.execPath, dir: ADAPTER_HOST_DIR, nodeModules: join(PROJECT_ROOT, 'node_modules') });
});

test('the tray app: node from PATH and the unpacked bundle (no packages beside it)', async () => {
  const rt = await hostRuntime({ electron: true, resourcesPath: resources, env: { PATH: `${join(root, 'empty')}:${realNodeDir}` } });
  assert.deepEqual(rt, { node: join(realNodeDir, 'node'), dir: join(resources, 'adapter-host') });
});

test('the tray app: AIOS_ADAPTER_NODE wins over PATH; an unpackaged shell uses the project host', async () => {
  const rt = await hostRuntime({ electron: true, resourcesPath: join(root, 'no-resources'), env: { PATH: oldNodeDir, AIOS_ADAPTER_NODE: join(realNodeDir, 'node') } });
  assert.deepEqual(rt, { node: join(realNodeDir, 'node'), dir: ADAPTER_HOST_DIR, nodeModules: join(PROJECT_ROOT, 'node_modules') });
});

test('the tray app without a usable Node.js: a typed reason, in both languages (none, too old, not runnable)', async () => {
  await assert.rejects(hostRuntime({ electron: true, resourcesPath: resources, env: { PATH: join(root, 'empty') } }), refusal(/Node\.js 20 or newer.*no node on PATH and AIOS_ADAPTER_NODE is not set/));
  await assert.rejects(hostRuntime({ electron: true, resourcesPath: resources, env: { PATH: oldNodeDir } }), refusal(/is Node\.js 18/));
  await assert.rejects(hostRuntime({ electron: true, resourcesPath: resources, env: { AIOS_ADAPTER_NODE: join(root, 'nowhere', 'node') } }), refusal(/cannot be run/));
  try {
    await hostRuntime({ electron: true, resourcesPath: resources, env: { PATH: oldNodeDir } });
  } catch (e) {
    assert.match(renderProblem((e as AdapterProblem).said, 'zh-CN'), /需要本机安装 Node\.js 20 或更高版本/);
  }
});
