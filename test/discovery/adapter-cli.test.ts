import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AdapterRegistry } from '../../src/discovery/registry.js';
import { TrustStore, importedKeysFile } from '../../src/discovery/trust-store.js';

const exec = promisify(execFile);
const EXAMPLE = new URL('../../examples/hello-adapter/', import.meta.url).pathname;
const CLI = ['--import', 'tsx', new URL('./cli-runner.ts', import.meta.url).pathname];
const cli = (...args: string[]) => exec(process.execPath, [...CLI, ...args]);
const cliFails = async (...args: string[]) => {
  try {
    await cli(...args);
  } catch (e) {
    return (e as { stderr: string }).stderr;
  }
  throw new Error(`expected failure: ${args.join(' ')}`);
};
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aios-cli-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('the committed example verifies with its example key', async () => {
  const out = await cli('adapter', 'verify', join(EXAMPLE, 'org.example.hello'), '--trust', join(EXAMPLE, 'keys', 'EXAMPLE-ONLY.jwks'));
  assert.match(out.stdout, /✓ org\.example\.hello 1\.0\.0: signature by example-hello-2026, code matches/);
});

test('author flow: keygen, validate, sign, verify; then keys import makes the agent load it', async () => {
  const adapter = join(dir, 'my-adapter');
  await cp(join(EXAMPLE, 'org.example.hello'), adapter, { recursive: true });
  await rm(join(adapter, 'adapter.json'));
  const keyFile = join(dir, 'publisher.private.jwk.json');
  await cli('adapter', 'keygen', keyFile, '--kid', 'publisher-1');
  assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
  const jwks = join(dir, 'publisher.jwks');
  assert.doesNotMatch(await readFile(jwks, 'utf8'), /"d"/);

  assert.match((await cli('adapter', 'validate', adapter)).stdout, /valid adapter/);
  assert.match((await cli('adapter', 'sign', adapter, '--key', keyFile)).stdout, /signed org\.example\.hello 1\.0\.0 with publisher-1: 2 files bound/);

  const dataDir = join(dir, 'data');
  // Not trusted yet: verify refuses and names the key.
  assert.match(await cliFails('adapter', 'verify', adapter, '--data-dir', dataDir), /no trusted key with id publisher-1/);
  assert.match(await cliFails('keys', 'import', keyFile, '--data-dir', dataDir), /private key material/);
  assert.match((await cli('keys', 'import', jwks, '--data-dir', dataDir)).stdout, /now trusting publisher-1/);
  assert.match((await cli('adapter', 'verify', adapter, '--data-dir', dataDir)).stdout, /code matches/);

  const trust = await TrustStore.load({ builtinDir: null, importedFile: importedKeysFile(dataDir) });
  const reg = new AdapterRegistry({ dirs: [dir], desktopDirs: [], trust, dataDir, watch: false });
  await reg.start();
  assert.equal(reg.getAdapter('org.example.hello')?.status.available, true);
  await reg.stop();

  await writeFile(join(adapter, 'index.mjs'), (await readFile(join(adapter, 'index.mjs'), 'utf8')) + '\n');
  assert.match(await cliFails('adapter', 'verify', adapter, '--data-dir', dataDir), /index\.mjs does not match its signed hash/);
  assert.match(await cliFails('adapter', 'validate', adapter), /signed code binding no longer matches/);
});

test('validate names schema problems by pointer', async () => {
  const bad = join(dir, 'bad');
  await cp(join(EXAMPLE, 'org.example.hello'), bad, { recursive: true });
  await rm(join(bad, 'adapter.json'));
  const y = await readFile(join(bad, 'tool.aios.yaml'), 'utf8');
  await writeFile(join(bad, 'tool.aios.yaml'), y.replace('level: public', 'level: extreme'));
  assert.match(await cliFails('adapter', 'validate', bad), /\/permissions\/0\/level/);
});
