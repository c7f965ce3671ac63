/**
 * An adapter a person approved but whose code fails to start keeps who signed it and that approval: the
 * registry says why it is unavailable, and `approve` (other levels) still reaches it, rather than calling it
 * "not a local adapter folder" (review finding after issue 35). Real registry, real adapter host process.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { AdapterRegistry } from '../../src/discovery/registry.js';
import { AdapterApprovals } from '../../src/discovery/adapter-approvals.js';
import { TrustStore } from '../../src/discovery/trust-store.js';
import { signAdapterDir } from '../../src/discovery/adapter-tools.js';
import { AdapterProblem } from '../../src/discovery/adapter-problem.js';
import { until } from '../helpers/wait.js';

const EXAMPLE = new URL('../../examples/hello-adapter/org.example.hello/', import.meta.url).pathname;
const ID = 'org.test.broken';
let root: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'aios-approval-start-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('an approved adapter that fails to start keeps its signer and approval; approving it again works and it runs once fixed', async () => {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const key = { kid: 'broken-publisher', alg: 'ES256' as const, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid: 'broken-publisher', alg: 'ES256' } as JWK };
  const adapters = join(root, 'adapters');
  const dir = join(adapters, 'broken');
  await mkdir(adapters, { recursive: true });
  await cp(EXAMPLE, dir, { recursive: true });
  await rm(join(dir, 'adapter.json'));
  const yaml = (await readFile(join(dir, 'tool.aios.yaml'), 'utf8')).replaceAll('org.example.hello', ID).replaceAll('hello.greet', 'broken.greet');
  await writeFile(join(dir, 'tool.aios.yaml'), yaml);
  const good = (await readFile(join(dir, 'index.mjs'), 'utf8')).replaceAll('hello.greet', 'broken.greet');
  // Signed, verified, but its module throws as it is imported: the host cannot start it.
  await writeFile(join(dir, 'index.mjs'), `throw new Error('broken on purpose');\n${good}`);
  await signAdapterDir(dir, key);

  const approvals = new AdapterApprovals({ file: join(root, 'adapter-approvals.json') });
  const reg = new AdapterRegistry({ dirs: [adapters], desktopDirs: [], trust: TrustStore.of([key.publicJwk]), dataDir: join(root, 'data'), inferFromDesktop: false, approvals });
  await reg.start();
  try {
    await until(() => reg.pendingAdapters().some((a) => a.id === ID), 30_000, 'the adapter waits for approval');
    await reg.approve(ID, {});
    const info = () => reg.getAdapter(ID);
    await until(() => info() && !info()!.status.pending && !info()!.status.available, 30_000, 'the approved adapter tried to start and failed');
    assert.equal(info()!.status.available, false);
    assert.ok(info()!.status.reason, 'it says why it is unavailable');
    assert.equal(reg.functions().some((f) => f.descriptor.id === 'broken.greet'), false);

    // The old code refused this with core.adapter.not_pending ("not a local adapter folder").
    await assert.doesNotReject(reg.approve(ID, { 'broken.greet': 'low' }, { rescan: false }), 'a person can approve it again');
    const file = (JSON.parse(await readFile(join(root, 'adapter-approvals.json'), 'utf8')) as { adapters: Record<string, { signer: string; levels?: Record<string, string> }> }).adapters;
    assert.equal(file[ID]?.signer, 'broken-publisher');
    assert.deepEqual(file[ID]?.levels, { 'broken.greet': 'low' });

    // Fixed (and signed again by the same publisher): it runs under the approval, at the chosen level.
    await writeFile(join(dir, 'index.mjs'), good);
    await signAdapterDir(dir, key);
    await reg.refresh('local');
    await until(() => reg.functions().some((f) => f.descriptor.id === 'broken.greet'), 30_000, 'the fixed adapter runs');
    assert.equal(reg.functions().find((f) => f.descriptor.id === 'broken.greet')!.descriptor.permission_level, 'low');
  } finally {
    await reg.stop();
  }
});

test('approve still refuses an adapter nobody approved that is not waiting', async () => {
  const reg = new AdapterRegistry({ dirs: [join(root, 'none')], desktopDirs: [], trust: TrustStore.of([]), dataDir: join(root, 'data2'), inferFromDesktop: false, approvals: new AdapterApprovals({ file: join(root, 'a2.json') }) });
  await reg.start();
  try {
    await assert.rejects(reg.approve('org.test.absent', {}), (e: unknown) => e instanceof AdapterProblem && e.said.key === 'core.adapter.not_pending');
  } finally {
    await reg.stop();
  }
});
