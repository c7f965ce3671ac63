/**
 * `aios-device handler new demo_echo` in a temp copy of the source tree (src/, handlers/, package.json,
 * node_modules linked): the scaffold's own test passes, its manifest matches its code (and `handler
 * manifest --check` fails once the YAML is edited), and a CLI-started agent of that copy offers
 * `demo_echo.echo` in `aios-device functions`. The built CLI (the copy's src/ compiled to dist/src/) writes
 * the manifest too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { buildSync } from 'esbuild';
import { EXIT_USAGE } from '../../src/cli/exit-codes.js';
import { agentDoc, bridgeDoc, cli, cliRun, ids, Proc, ROOT, tempDir, tokens, until } from '../helpers/stack.js';

/** A copy of what the CLI and the handlers need, with node_modules linked (never installed). */
function sourceCopy(dir: string): string {
  const copy = join(dir, 'repo');
  mkdirSync(copy);
  for (const p of ['src', 'handlers', 'package.json', 'tsconfig.json']) cpSync(join(ROOT, p), join(copy, p), { recursive: true, filter: (s) => !s.includes(`${join('handlers', 'zz_')}`) });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  return copy;
}

/** Runs node with tsx in the copy and waits for it to end. */
async function node(copy: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  // Without the parent runner's NODE_TEST_CONTEXT, a nested `node --test` reports plain TAP on stdout.
  const env = { ...process.env };
  delete env['NODE_TEST_CONTEXT'];
  const p = new Proc(spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: copy, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const code = await p.exited;
  return { code, out: p.out, err: p.err };
}

test('handler new demo_echo: its test passes, its manifest is checked, a CLI-started agent offers it', async () => {
  const dir = tempDir('aios-scaffold-');
  const procs: Proc[] = [];
  try {
    const copy = sourceCopy(dir);
    const main = join(copy, 'src', 'cli', 'main.ts');
    const made = await node(copy, [main, 'handler', 'new', 'demo_echo']);
    assert.equal(made.code, 0, made.err);
    const folder = join(copy, 'handlers', 'demo_echo');
    for (const f of ['index.ts', 'i18n/en.json', 'i18n/zh-CN.json', 'test/demo_echo.test.ts', 'tool.aios.yaml']) assert.ok(existsSync(join(folder, f)), `${f} was written`);
    assert.equal((await node(copy, [main, 'handler', 'new', 'demo_echo'])).code, EXIT_USAGE, 'an existing folder is refused (usage error)');
    assert.equal((await node(copy, [main, 'handler', 'new', 'Bad-Name'])).code, EXIT_USAGE, 'a bad name is refused');

    const t = await node(copy, ['--test', '--test-reporter=tap', join(folder, 'test', 'demo_echo.test.ts')]);
    assert.equal(t.code, 0, `the generated test passes:\n${t.out}\n${t.err}`);
    assert.match(t.out, /# pass 1/);

    assert.equal((await node(copy, [main, 'handler', 'manifest', '--check'])).code, 0, 'every manifest in the copy matches its code');
    const yaml = join(folder, 'tool.aios.yaml');
    writeFileSync(yaml, readFileSync(yaml, 'utf8').replace('name: Echo a text', 'name: Echo something'));
    const check = await node(copy, [main, 'handler', 'manifest', '--check']);
    assert.equal(check.code, 1, 'a hand-edited manifest fails the check');
    assert.match(check.out, /differs: .*demo_echo[/\\]tool\.aios\.yaml/);

    // A bridge (this tree's CLI) and an agent started from the copy's CLI.
    const tk = tokens();
    mkdirSync(join(dir, 'bridge'), { recursive: true, mode: 0o700 }); // the bridge keeps its data only in a private folder
    writeFileSync(join(dir, 'bridge.cfg.json'), JSON.stringify(bridgeDoc(dir, tk)));
    const bridge = cli(['bridge', '--config', join(dir, 'bridge.cfg.json')]);
    procs.push(bridge);
    const bridgeFile = join(dir, 'bridge', 'bridge.json');
    await until(() => existsSync(bridgeFile), 30_000, 'bridge.json');
    const url = (JSON.parse(readFileSync(bridgeFile, 'utf8')) as { url: string }).url;
    writeFileSync(join(dir, 'agent.cfg.json'), JSON.stringify(agentDoc(dir, url, tk)));
    const agent = new Proc(spawn(process.execPath, ['--import', 'tsx', main, 'run', '--config', join(dir, 'agent.cfg.json')], { cwd: copy, stdio: ['ignore', 'pipe', 'pipe'] }));
    procs.push(agent);
    const args = ['functions', '--bridge', url, '--token', tk.runtime, '--workspace', ids.workspace_id, '--device', ids.device_id];
    const listed = await until(async () => {
      const r = await cliRun(args);
      return r.code === 0 && r.out.includes('demo_echo.echo') ? r.out : '';
    }, 60_000, 'demo_echo.echo in `aios-device functions`');
    assert.match(listed, /demo_echo\.echo\s+low\s+Echo a text/);
  } finally {
    for (const p of procs) await p.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Compiles the copy's src/ to dist/src/ as `npm run build` lays it out (transpiled only: the type-check is tsc's job elsewhere). */
function buildCopy(copy: string): string {
  const files: string[] = [];
  const json: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) files.push(p);
      else if (p.endsWith('.json')) json.push(p);
    }
  };
  walk(join(copy, 'src'));
  buildSync({ entryPoints: files, outdir: join(copy, 'dist', 'src'), outbase: join(copy, 'src'), format: 'esm', platform: 'node', target: 'node20.10', logLevel: 'error' });
  // tsc copies the JSON modules the code imports (the catalogues); so does this.
  for (const f of json) cpSync(f, join(copy, 'dist', 'src', relative(join(copy, 'src'), f)));
  return join(copy, 'dist', 'src', 'cli', 'main.js');
}

test('the built CLI\'s handler new writes the manifest as the tsx CLI does (no "run npm run manifests" step left over)', async () => {
  const dir = tempDir('aios-scaffold-built-');
  try {
    const copy = sourceCopy(dir);
    const built = buildCopy(copy);
    const env = { ...process.env };
    delete env['NODE_TEST_CONTEXT'];
    const p = new Proc(spawn(process.execPath, [built, 'handler', 'new', 'demo_built'], { cwd: copy, env, stdio: ['ignore', 'pipe', 'pipe'] }));
    assert.equal(await p.exited, 0, p.err);
    const folder = join(copy, 'handlers', 'demo_built');
    assert.ok(existsSync(join(folder, 'tool.aios.yaml')), `tool.aios.yaml was written:\n${p.out}`);
    assert.doesNotMatch(p.out, /npm run manifests/);
    assert.equal((await node(copy, [join(copy, 'src', 'cli', 'main.ts'), 'handler', 'manifest', '--check', folder])).code, 0, 'the manifest matches its code');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
