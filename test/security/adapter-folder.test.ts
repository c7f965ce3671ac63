/**
 * Signed adapter folders (issue 13, item 8): what a signature covers is what runs. Hidden files and links
 * leaving the folder are refused, and the code is loaded from a private copy of the bytes that were
 * checked, so a file swapped between the check and the import never runs.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { signAdapterDir, validateAdapterDir } from '../../src/discovery/adapter-tools.js';
import { TrustStore } from '../../src/discovery/trust-store.js';
import type { CardSigningKey } from '../../src/protocol/card-sign.js';
import { verifySignedAdapter, prepareLocalAdapter } from '../../src/discovery/local-adapter.js';
import { scanAdapterDirs } from '../../src/discovery/adapter-scanner.js';
import { standaloneTemp } from '../../src/sdk/temp.js';
import type { CallContext, HandlerEnv } from '../../src/sdk/index.js';

const EXAMPLE = new URL('../../examples/hello-adapter/org.example.hello/', import.meta.url).pathname;
let root: string;
let outside: string;
let key: CardSigningKey;
let trust: TrustStore;

const log = { debug() {}, info() {}, warn() {}, error() {}, child: () => log };
function env(dir: string): HandlerEnv {
  return { grants: { list: () => [] } as never, options: {}, dataDir: dir, log, appVersion: '0', listFunctions: () => [] } as unknown as HandlerEnv;
}
function ctx(): CallContext {
  return { callId: 'c1', functionId: 'hello.greet', signal: new AbortController().signal, requester: undefined, log, blobs: {} as never, progress() {}, commit() {}, resources: [], ...standaloneTemp() };
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'aios-adfold-'));
  outside = join(root, 'outside');
  await mkdir(outside);
  await writeFile(join(outside, 'evil.mjs'), 'export default { name: "evil", create() { return []; } };\n');
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  key = { kid: 'adfold', alg: 'ES256', privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid: 'adfold', alg: 'ES256' } };
  trust = TrustStore.of([key.publicJwk]);
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A signed copy of the example adapter; `edit` runs after signing (what an attacker does to the folder). */
async function signed(name: string, edit?: (dir: string) => Promise<void>): Promise<string> {
  const dir = join(root, 'adapters', name);
  await cp(EXAMPLE, dir, { recursive: true });
  await signAdapterDir(dir, key);
  if (edit) await edit(dir);
  return dir;
}

async function card(dir: string): Promise<unknown> {
  return JSON.parse(await readFile(join(dir, 'adapter.json'), 'utf8'));
}

test('an unsigned hidden file next to signed code refuses the folder', async () => {
  const dir = await signed('hidden', (d) => writeFile(join(d, '.evil.mjs'), 'export default 1;\n'));
  await assert.rejects(verifySignedAdapter(dir, await card(dir), trust), /code refused: file \.evil\.mjs is not covered by the signature/);
  const nested = await signed('hidden-nested', async (d) => {
    await mkdir(join(d, '.hooks'));
    await writeFile(join(d, '.hooks', 'x.mjs'), 'export default 1;\n');
  });
  await assert.rejects(verifySignedAdapter(nested, await card(nested), trust), /file \.hooks\/x\.mjs is not covered/);
});

test('a hidden file that was signed is bound like any other: changing it refuses the folder', async () => {
  const dir = join(root, 'adapters', 'hidden-signed');
  await cp(EXAMPLE, dir, { recursive: true });
  await writeFile(join(dir, '.helper.mjs'), 'export const x = 1;\n');
  const c = await signAdapterDir(dir, key);
  assert.ok(c.code && '.helper.mjs' in c.code.files, 'the signature covers the hidden file');
  await verifySignedAdapter(dir, await card(dir), trust);
  await writeFile(join(dir, '.helper.mjs'), 'export const x = 2;\n');
  await assert.rejects(verifySignedAdapter(dir, await card(dir), trust), /file \.helper\.mjs does not match its signed hash/);
});

test('a link leaving the folder refuses it, signed or not; signing such a folder fails too', async () => {
  const dir = await signed('link-out', (d) => symlink(join(outside, 'evil.mjs'), join(d, 'lib.mjs')));
  await assert.rejects(verifySignedAdapter(dir, await card(dir), trust), /code refused: link lib\.mjs points outside the adapter folder/);
  const dirLink = await signed('dir-link-out', (d) => symlink(outside, join(d, 'vendor')));
  await assert.rejects(verifySignedAdapter(dirLink, await card(dirLink), trust), /link vendor points outside the adapter folder/);
  // An author cannot sign it either, and `adapter validate` names the link.
  const fresh = join(root, 'adapters', 'link-sign');
  await cp(EXAMPLE, fresh, { recursive: true });
  await symlink(join(outside, 'evil.mjs'), join(fresh, 'lib.mjs'));
  await assert.rejects(signAdapterDir(fresh, key), /link lib\.mjs points outside the adapter folder/);
  assert.ok((await validateAdapterDir(fresh)).some((p) => /link lib\.mjs points outside/.test(p.message)));
});

test('a signed file replaced by a link out of the folder is refused even when the target has the signed bytes', async () => {
  const dir = await signed('swap-link', async (d) => {
    await cp(join(d, 'index.mjs'), join(outside, 'index.mjs'));
    await rm(join(d, 'index.mjs'));
    await symlink(join(outside, 'index.mjs'), join(d, 'index.mjs'));
  });
  await assert.rejects(verifySignedAdapter(dir, await card(dir), trust), /link index\.mjs points outside the adapter folder/);
});

test('the code that runs is the code that was checked: a swap after the check does not run', async () => {
  const dir = await signed('toctou');
  const [cand] = await scanAdapterDirs([join(root, 'adapters')]).then((cs) => cs.filter((c) => c.dir === dir));
  assert.ok(cand, 'the scanner finds the signed folder');
  const codeDir = await mkdtemp(join(tmpdir(), 'aios-adcode-'));
  const entry = join(dir, 'index.mjs');
  let swapped = false;
  // The live load path (the registry's): verify, then ask for the code folder, copy, start. The attacker's
  // moment is between the check and the start: here, when the folder the copy goes to is asked for.
  const p = await prepareLocalAdapter(cand!, {
    trust,
    developerMode: false,
    desktop: new Map(),
    env: () => env(join(root, 'data-toctou')),
    codeDir: async () => {
      await writeFile(entry, "export default { name: 'org.example.hello', create() { return [{ descriptor: { id: 'hello.greet' }, run: async () => ({ greeting: 'pwned' }) }]; } };\n");
      swapped = true;
      return codeDir;
    },
  });
  try {
    assert.ok(swapped, 'the entry was replaced after the check');
    assert.ok(p.status.available, JSON.stringify(p.status));
    assert.match(await readFile(entry, 'utf8'), /pwned/, 'the folder holds the swapped file');
    assert.deepEqual(await p.functions[0]!.run({ name: 'Ada' } as never, ctx()), { greeting: 'Hello, Ada!' });
    // The private copy: one folder, 0700, its files 0600; it goes away with the adapter.
    const [copy] = await readdir(codeDir);
    assert.ok(copy, 'the code was copied');
    assert.equal((await stat(join(codeDir, copy!))).mode & 0o777, 0o700);
    assert.equal((await stat(join(codeDir, copy!, 'index.mjs'))).mode & 0o777, 0o600);
  } finally {
    await p.dispose?.();
  }
  assert.deepEqual(await readdir(codeDir), []);
  await rm(codeDir, { recursive: true, force: true });
});

test('through the scanner: a good signed folder loads from the private copy; a refused one leaves no copy', async () => {
  const scanRoot = join(root, 'scan');
  await mkdir(scanRoot);
  await cp(EXAMPLE, join(scanRoot, 'org.example.hello'), { recursive: true });
  await signAdapterDir(join(scanRoot, 'org.example.hello'), key);
  await cp(EXAMPLE, join(scanRoot, 'bad'), { recursive: true });
  await signAdapterDir(join(scanRoot, 'bad'), key);
  await writeFile(join(scanRoot, 'bad', '.evil.mjs'), 'export default 1;\n');
  const codeDir = await mkdtemp(join(tmpdir(), 'aios-adcode-'));
  const cands = await scanAdapterDirs([scanRoot]);
  const results = await Promise.all(
    cands.map((c) => prepareLocalAdapter(c, { trust, developerMode: false, desktop: new Map(), env: () => env(join(root, 'data2')), codeDir: async () => codeDir })),
  );
  const good = results.find((r) => r.status.available);
  const bad = results.find((r) => !r.status.available);
  try {
    assert.ok(good && bad);
    assert.match(bad.status.reason ?? '', /\.evil\.mjs is not covered by the signature/);
    assert.deepEqual(await good.functions[0]!.run({ name: 'Bo' } as never, ctx()), { greeting: 'Hello, Bo!' });
    assert.equal((await readdir(codeDir)).length, 1, 'only the accepted adapter was copied');
  } finally {
    await good?.dispose?.();
    await rm(codeDir, { recursive: true, force: true });
  }
});
