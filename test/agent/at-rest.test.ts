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
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { agentDoc, CLI, Proc, procReport, ROOT, tempDir, tokens, until } from '../helpers/stack.js';
import { buildValidators } from '../../src/kit/precompile.js';

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

test('the agent at rest has not loaded the bridge, the trial, the QR encoders, a handler\'s heavy libraries or ajv\'s compiler', async () => {
  const dir = tempDir();
  const listFile = join(dir, 'loaded.json');
  const validators = join(dir, 'validators');
  await buildValidators(validators);
  const config = join(dir, 'agent.json');
  // A bridge nobody listens on: the agent starts, loads every handler and keeps trying to connect.
  writeFileSync(config, JSON.stringify(agentDoc(dir, 'http://127.0.0.1:9', tokens())));
  const agent = new Proc(
    spawn(process.execPath, ['--import', 'tsx', '--import', join(ROOT, 'test', 'fixtures', 'loaded-modules.mjs'), CLI, 'run', '--config', config], {
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
    const loaded = JSON.parse(readFileSync(listFile, 'utf8')) as string[];
    assert.ok(loaded.some((f) => f.includes(`${sep}handlers${sep}serial${sep}`)), 'the handlers were loaded (the list is complete)');
    const found = HEAVY.flatMap(([frag, when]) => {
      const hits = loaded.filter((f) => f.includes(frag));
      return hits.length ? [`${frag} (${hits.length} files, e.g. ${hits[0]}): should load only with ${when}`] : [];
    });
    assert.deepEqual(found, []);
  } finally {
    if (agent.child.exitCode === null && agent.child.signalCode === null) await agent.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
