import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AdapterRegistry } from '../../src/discovery/registry.js';
import { TrustStore, importedKeysFile } from '../../src/discovery/trust-store.js';
import { cliRun } from '../helpers/stack.js';

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

/**
 * Two installed adapter folders with problems: one whose tool.aios.yaml the parser cannot read, one that
 * breaks its schema (an unknown key, a value of the wrong type, a level that does not exist).
 */
async function brokenAdapters(root: string): Promise<{ unreadable: string; offSchema: string }> {
  const unreadable = join(root, 'org.example.unreadable');
  const offSchema = join(root, 'org.example.offschema');
  for (const d of [unreadable, offSchema]) {
    await cp(join(EXAMPLE, 'org.example.hello'), d, { recursive: true });
    await rm(join(d, 'adapter.json'));
  }
  const y = await readFile(join(EXAMPLE, 'org.example.hello', 'tool.aios.yaml'), 'utf8');
  await writeFile(join(unreadable, 'tool.aios.yaml'), y.replace(/^ {2}name: Hello example adapter$/m, '  name: [Hello example adapter'));
  await writeFile(
    join(offSchema, 'tool.aios.yaml'),
    y.replace(/^ {2}name: Hello example adapter$/m, '  name: 5\n  colour: red').replace('level: public', 'level: extreme'),
  );
  return { unreadable, offSchema };
}

const ZH = { LC_ALL: 'zh_CN.UTF-8', LANG: 'zh_CN.UTF-8' };

test('validate says a broken tool.aios.yaml and a schema violation in the user\'s language (real CLI, zh_CN and en)', async () => {
  const { unreadable, offSchema } = await brokenAdapters(await mkdtemp(join(dir, 'validate-')));
  const yamlZh = await cliRun(['adapter', 'validate', unreadable], ZH);
  assert.equal(yamlZh.code, 1, yamlZh.err);
  assert.match(yamlZh.err, /^✗ 无法读取 tool\.aios\.yaml 第 \d+ 行第 \d+ 列：\S/m);
  const yamlEn = await cliRun(['adapter', 'validate', unreadable]);
  assert.equal(yamlEn.code, 1, yamlEn.err);
  assert.match(yamlEn.err, /^✗ tool\.aios\.yaml line \d+, column \d+ could not be read: \S/m);

  const schemaZh = await cliRun(['adapter', 'validate', offSchema], ZH);
  assert.equal(schemaZh.code, 1, schemaZh.err);
  assert.match(schemaZh.err, /^✗ tool\.aios\.yaml 不符合其模式（/m);
  assert.match(schemaZh.err, /\/tool\/name：应当是 string 类型/, 'ajv\'s words through ajv-i18n');
  assert.match(schemaZh.err, /\/tool\/colour：不是允许的属性/);
  assert.match(schemaZh.err, /\/permissions\/0\/level：必须是以下之一："public", "low", "medium", "high", "critical"/);
  assert.doesNotMatch(schemaZh.err, /must|is not an allowed|does not match/);
  const schemaEn = await cliRun(['adapter', 'validate', offSchema], { LANG: 'en_US.UTF-8' });
  assert.equal(schemaEn.code, 1, schemaEn.err);
  assert.match(schemaEn.err, /^✗ tool\.aios\.yaml does not match its schema \(/m);
  assert.match(schemaEn.err, /\/tool\/name must be string/);
  assert.match(schemaEn.err, /\/tool\/colour is not an allowed property/);
  assert.match(schemaEn.err, /\/permissions\/0\/level must be one of "public", "low", "medium", "high", "critical"/);
});

test('adapters list says why installed adapters are unavailable in the user\'s language; --json keeps the English reason', async () => {
  const root = await mkdtemp(join(dir, 'installed-'));
  const adapters = join(root, 'adapters');
  await mkdir(adapters);
  await brokenAdapters(adapters);
  // An unsigned but well-formed adapter, outside developer mode: a reason our own code gives.
  await cp(join(EXAMPLE, 'org.example.hello'), join(adapters, 'org.example.hello'), { recursive: true });
  await rm(join(adapters, 'org.example.hello', 'adapter.json'));
  const cfg = join(root, 'agent.yaml');
  await writeFile(cfg, `adapters: { dirs: [${JSON.stringify(adapters)}] }\n`);
  const args = ['adapters', 'list', '--config', cfg, '--data-dir', join(root, 'data')];

  const zh = await cliRun(args, ZH);
  assert.equal(zh.code, 0, zh.err);
  assert.match(zh.out, /✗ org\.example\.unreadable .*\n {4}无法读取 tool\.aios\.yaml 第 \d+ 行第 \d+ 列：\S/);
  assert.match(zh.out, /✗ org\.example\.offschema .*\n {4}tool\.aios\.yaml 不符合其模式（.*\/tool\/name：应当是 string 类型/);
  assert.match(zh.out, /✗ org\.example\.hello .*\n {4}该适配器未签名：请用 `aios-device adapter sign` 签名/);
  assert.doesNotMatch(zh.out, /could not be read|does not match|is not signed/);

  const en = await cliRun(args);
  assert.equal(en.code, 0, en.err);
  assert.match(en.out, /✗ org\.example\.unreadable .*\n {4}tool\.aios\.yaml line \d+, column \d+ could not be read: \S/);
  assert.match(en.out, /✗ org\.example\.offschema .*\n {4}tool\.aios\.yaml does not match its schema \(.*\/tool\/name must be string/);
  assert.match(en.out, /✗ org\.example\.hello .*\n {4}the adapter is not signed; sign it with `aios-device adapter sign`/);

  // JSON output is for programs: the reason stays the English one, even in Chinese.
  const json = await cliRun([...args, '--json'], ZH);
  assert.equal(json.code, 0, json.err);
  const rows = JSON.parse(json.out) as { id: string; reason?: string }[];
  assert.match(rows.find((r) => r.id === 'org.example.offschema')?.reason ?? '', /^tool\.aios\.yaml does not match its schema \(/);
  assert.ok(rows.every((r) => !Object.keys(r).some((k) => k.endsWith('_message'))), 'no catalogue data in --json');
});

test('sign says what is wrong with the key file in the user\'s language', async () => {
  const root = await mkdtemp(join(dir, 'sign-'));
  const adapter = join(root, 'org.example.hello');
  await cp(join(EXAMPLE, 'org.example.hello'), adapter, { recursive: true });
  await rm(join(adapter, 'adapter.json'));
  // The public half only: a JWK with its kid but no private part.
  const pub = (JSON.parse(await readFile(join(EXAMPLE, 'keys', 'EXAMPLE-ONLY.jwks'), 'utf8')) as { keys: object[] }).keys[0]!;
  const keyFile = join(root, 'public-only.jwk.json');
  await writeFile(keyFile, JSON.stringify(pub));
  const zh = await cliRun(['adapter', 'sign', adapter, '--key', keyFile], ZH);
  assert.equal(zh.code, 1, zh.err);
  assert.match(zh.err, /^✗ 密钥文件中没有私钥$/m);
  const en = await cliRun(['adapter', 'sign', adapter, '--key', keyFile]);
  assert.equal(en.code, 1, en.err);
  assert.match(en.err, /^✗ the key file holds no private key$/m);
  await assert.rejects(readFile(join(adapter, 'adapter.json')), 'nothing was signed');
});

test('keys import refuses a private key in the user\'s language', async () => {
  const data = join(await mkdtemp(join(dir, 'keys-')), 'data');
  const priv = join(EXAMPLE, 'keys', 'EXAMPLE-ONLY.private.jwk.json');
  const zh = await cliRun(['keys', 'import', priv, '--data-dir', data], ZH);
  assert.equal(zh.code, 1, zh.out);
  assert.match(zh.err, /^✗ 密钥 0（example-hello-2026）含有私钥材料；只能导入公钥$/m);
  const en = await cliRun(['keys', 'import', priv, '--data-dir', data]);
  assert.equal(en.code, 1, en.out);
  assert.match(en.err, /^✗ key 0 \(example-hello-2026\) holds private key material; import only public keys$/m);
});
