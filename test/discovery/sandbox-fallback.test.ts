/**
 * Where bubblewrap cannot run (here: not on PATH), a third-party adapter does not start unless the admin
 * allowed unsandboxed adapters; then it runs (the example adapter, unchanged) and its status says so.
 * PATH is emptied before anything probes for bwrap (the probe runs once per process).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdapterRegistry } from '../../src/discovery/registry.js';
import { TrustStore, parseJwks } from '../../src/discovery/trust-store.js';
import type { CallContext } from '../../src/sdk/index.js';
import { standaloneTemp } from '../../src/sdk/temp.js';

const EXAMPLE = new URL('../../examples/hello-adapter/', import.meta.url).pathname;
let root: string;
let trust: TrustStore;
const savedPath = process.env['PATH'];

before(async () => {
  process.env['PATH'] = '/nonexistent';
  root = await mkdtemp(join(tmpdir(), 'aios-nosandbox-'));
  await mkdir(join(root, 'adapters'), { recursive: true });
  await cp(join(EXAMPLE, 'org.example.hello'), join(root, 'adapters', 'org.example.hello'), { recursive: true });
  trust = TrustStore.of(parseJwks(JSON.parse(await readFile(join(EXAMPLE, 'keys', 'EXAMPLE-ONLY.jwks'), 'utf8'))));
});
after(async () => {
  process.env['PATH'] = savedPath;
  await rm(root, { recursive: true, force: true });
});

function ctx(): CallContext {
  const log = { debug() {}, info() {}, warn() {}, error() {}, child: () => log };
  return { callId: 'c1', functionId: 'hello.greet', signal: new AbortController().signal, requester: undefined, log, blobs: {} as never, progress() {}, commit() {}, resources: [], ...standaloneTemp() };
}

test('without bubblewrap: refused with the reason by default; with adapters.unsandboxed: allow it runs and says it is unsandboxed', async () => {
  const refusing = new AdapterRegistry({ dirs: [join(root, 'adapters')], desktopDirs: [], trust, dataDir: join(root, 'data1'), inferFromDesktop: false, watch: false });
  await refusing.start();
  const refused = refusing.getAdapter('org.example.hello')!;
  assert.equal(refused.status.available, false);
  assert.match(refused.status.reason ?? '', /not started: the sandbox \(bubblewrap\) cannot run here \(bwrap is not installed/);
  assert.equal(refusing.functions().length, 0);
  await refusing.stop();

  const allowing = new AdapterRegistry({ dirs: [join(root, 'adapters')], desktopDirs: [], trust, dataDir: join(root, 'data2'), inferFromDesktop: false, watch: false, allowUnsandboxed: true });
  await allowing.start();
  try {
    const e = allowing.getAdapter('org.example.hello')!;
    assert.equal(e.status.available, true, e.status.reason);
    assert.equal(e.status.unsandboxed, true);
    assert.match(e.status.warning ?? '', /runs without a sandbox/);
    const greet = allowing.functions().find((f) => f.descriptor.id === 'hello.greet')!;
    assert.deepEqual(await greet.run({ name: 'Ada' } as never, ctx()), { greeting: 'Hello, Ada!' });
    assert.equal(await greet.describe?.({ name: 'Ada' } as never, []), 'Greet Ada');
  } finally {
    await allowing.stop();
  }
});
