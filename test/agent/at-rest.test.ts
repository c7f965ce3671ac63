/**
 * The agent at rest loads only what a call needs (issue 32 item 1): started as `aios-device run` does,
 * with every built-in handler, it has not loaded the bridge, the trial, the QR code encoders, or a
 * handler's native or document libraries (serialport, noble, pdfkit), which load on first use, or the
 * CLI's display-width library (string-width: help and tables); and,
 * given the precompiled validators a build makes (generated here from the current code, as `npm run
 * build` does), not ajv's compiler either: every schema it checks at start is precompiled.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { agentDoc, CLI, Proc, procReport, ROOT, tempDir, tokens, until } from '../helpers/stack.js';
import { buildValidators } from '../../src/kit/precompile.js';
import { slow } from '../helpers/wait.js';

/** Path fragments of modules an agent at rest must not have loaded, and where each loads instead. */
const HEAVY: [fragment: string, loadsWhen: string][] = [
  [`${sep}src${sep}bridge${sep}`, '`aios-device bridge` and `demo`'],
  [`${sep}src${sep}trial${sep}`, '`aios-device trial`'],
  [`${sep}node_modules${sep}qrcode${sep}`, 'a sign-in from the window'],
  [`${sep}node_modules${sep}qrcode-terminal${sep}`, '`aios-device login`'],
  [`${sep}node_modules${sep}pdfkit${sep}`, 'the printer\'s first conversion'],
  [`${sep}node_modules${sep}serialport${sep}`, 'the first serial call'],
  [`${sep}node_modules${sep}@serialport${sep}`, 'the first serial call'],
  [`${sep}node_modules${sep}@abandonware${sep}`, 'the first Bluetooth call'],
  // Its import makes an Intl.Segmenter (ICU's break-iterator data, ≈ 2.7 MB RSS): src/cli/display-width.ts.
  [`${sep}node_modules${sep}string-width${sep}`, 'help or a table: every command but `run`'],
  [`${sep}node_modules${sep}ajv${sep}dist${sep}compile${sep}`, 'a schema the build did not precompile (an adapter\'s)'],
];

/**
 * Starts `node [loader] <cli> run` with every built-in handler and the load hook; resolves to the files it
 * had loaded at rest and what it printed on its standard output (V8's traces, with `--trace-opt`).
 */
async function atRest(dir: string, cli: string, loader: string[]): Promise<{ loaded: string[]; out: string }> {
  const listFile = join(dir, 'loaded.json');
  const validators = join(dir, 'validators');
  await buildValidators(validators);
  const config = join(dir, 'agent.json');
  // A bridge nobody listens on: the agent starts, loads every handler and keeps trying to connect.
  writeFileSync(config, JSON.stringify(agentDoc(dir, 'http://127.0.0.1:9', tokens())));
  const agent = new Proc(
    spawn(process.execPath, [...loader, '--import', join(ROOT, 'test', 'fixtures', 'loaded-modules.mjs'), cli, 'run', '--config', config], {
      cwd: ROOT,
      env: { ...process.env, LC_ALL: 'C.UTF-8', AIOS_LOADED_MODULES_OUT: listFile, AIOS_VALIDATORS_DIR: validators },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  try {
    // The CLI's own line, printed after its SIGTERM handler is set (the log's JSON 'agent ready' comes earlier).
    await until(() => /agent ready: \d+ functions/.test(agent.err) || agent.child.exitCode !== null, 60_000, 'agent ready').catch((e: Error) => {
      throw new Error(`${e.message}\n${procReport('agent', agent)}`, { cause: e });
    });
    assert.match(agent.err, /agent ready: \d+ functions/, procReport('agent', agent));
    await agent.kill('SIGTERM');
    assert.ok(existsSync(listFile), procReport('agent', agent));
    return { loaded: JSON.parse(readFileSync(listFile, 'utf8')) as string[], out: agent.out };
  } finally {
    if (agent.child.exitCode === null && agent.child.signalCode === null) await agent.kill('SIGKILL');
  }
}

/** The HEAVY entries found in `files` (module files, or for a bundle the modules inside the chunks loaded). */
function heavyIn(files: string[]): string[] {
  return HEAVY.flatMap(([frag, when]) => {
    const hits = files.filter((f) => f.includes(frag));
    return hits.length ? [`${frag} (${hits.length} files, e.g. ${hits[0]}): should load only with ${when}`] : [];
  });
}

test('the agent at rest has not loaded the bridge, the trial, the QR encoders, a handler\'s heavy libraries or ajv\'s compiler', async () => {
  const dir = tempDir();
  try {
    const { loaded } = await atRest(dir, CLI, ['--import', 'tsx']);
    assert.ok(loaded.some((f) => f.includes(`${sep}handlers${sep}serial${sep}`)), 'the handlers were loaded (the list is complete)');
    assert.deepEqual(heavyIn(loaded), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the built bundle (`aios-device`, dist/agent/main.js) runs the agent from one copy of its modules and keeps the same things lazy', { timeout: slow(240_000) }, async () => {
  // What `npm run build` makes, into a folder of its own under the project (node_modules is found from there).
  const out = join(ROOT, `.test-tmp-bundle-${process.pid}`);
  const dir = tempDir();
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json'), '--outDir', out], { cwd: ROOT, stdio: 'inherit' });
    const meta = join(dir, 'meta.json');
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-agent-bundle.mjs'), '--dist', out, '--metafile', meta], { cwd: ROOT, stdio: 'inherit' });
    const bundle = join(out, 'agent');
    const help = execFileSync(process.execPath, [join(bundle, 'main.js'), 'run', '--help'], { cwd: dir, encoding: 'utf8' });
    assert.match(help, /run the device agent headless/);
    // V8's optimising compiler is held off at rest (src/base/optimiser.ts): its first use costs ≈ 7 MB.
    const { loaded, out: traces } = await atRest(dir, join(bundle, 'main.js'), ['--trace-opt']);
    assert.deepEqual(traces.split('\n').filter((l) => l.includes('completed optimizing')), [], 'the agent at rest optimised no function');
    // Every module of the build comes from the bundle: none from the compiled modules beside it (a second copy).
    assert.deepEqual(loaded.filter((f) => f.startsWith(out + sep) && !f.startsWith(bundle + sep)), []);
    // The modules inside the chunks it loaded (esbuild's metafile: output → its inputs), as paths.
    const outputs = (JSON.parse(readFileSync(meta, 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> }).outputs;
    const inside = loaded.flatMap((f) => {
      const o = outputs[relative(ROOT, f).split(sep).join('/')];
      return o ? Object.keys(o.inputs).map((i) => resolve(ROOT, i)) : [f];
    });
    assert.ok(inside.some((f) => f.includes(`${sep}handlers${sep}serial${sep}`)), 'the handlers were loaded (the list is complete)');
    assert.deepEqual(heavyIn(inside), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
  }
});
