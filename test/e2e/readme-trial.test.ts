/**
 * Issue 30, out of the box: the README's tour ends with the QA trial, and on a fresh demo (what `npm start`
 * runs: `aios-device demo` in the project folder) that command exits 0 with line 6 `simulated`. The command
 * is read from the README itself, so the tour and this test cannot drift apart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CLI, Proc, ROOT, procReport, tempDir, until } from '../helpers/stack.js';
import type { TrialReport } from '../../src/trial/types.js';
import { freePort } from '../helpers/net.js';
import { slow } from '../helpers/wait.js';

/** The README's trial command, as argv (its `sh` block that runs `trial`, continuation lines joined). */
function readmeTrialCommand(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/\\\n\s*/g, ''));
  const lines = blocks.flatMap((b) => b.split('\n')).filter((l) => /^node dist\/src\/cli\/main\.js trial /.test(l));
  assert.equal(lines.length, 1, 'the README has one trial command');
  return lines[0]!.trim().split(/\s+/);
}


/** The CLI run from `cwd` (the demo's paths are relative to where it starts), through tsx as the other e2e tests run it. */
function cliIn(cwd: string, args: string[]): Proc {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return new Proc(spawn(process.execPath, ['--import', tsx, CLI, ...args], { cwd, env: { ...process.env, LC_ALL: 'C.UTF-8' }, stdio: ['ignore', 'pipe', 'pipe'] }));
}

test("the README's trial command against a fresh demo exits 0, with line 6 simulated", { timeout: slow(600_000) }, async () => {
  const argv = readmeTrialCommand();
  assert.deepEqual(argv.slice(0, 3), ['node', 'dist/src/cli/main.js', 'trial']);
  const dir = tempDir();
  // `npm start` is `aios-device demo` with the default --dir .demo; only the port is this test's own.
  const demo = cliIn(dir, ['demo', '--port', String(await freePort())]);
  try {
    await until(() => demo.out.includes('Ctrl-C stops both'), 60_000, 'demo banner').catch((e: Error) => {
      throw new Error(`${e.message}\n${procReport('demo', demo)}`, { cause: e });
    });
    const trial = cliIn(dir, argv.slice(2));
    const code = await trial.exited;
    assert.equal(code, 0, `${trial.out}\n${trial.err}`);
    const json = argv[argv.indexOf('--json') + 1]!;
    const report = JSON.parse(readFileSync(join(dir, json), 'utf8')) as TrialReport;
    assert.equal(report.ok, true);
    assert.equal(report.lines.find((l) => l.line === '6')?.verdict, 'simulated', trial.out);
    assert.equal(report.checks.find((c) => c.id === 'confirm.high_risk')?.verdict, 'simulated');
    // What was not tested is said, not hidden: the printer functions are there, not run, with the reason.
    const printer = report.checks.find((c) => c.id === 'contract.printer.get_attributes');
    assert.equal(printer?.verdict, 'not_run');
    assert.equal(printer?.required, false);
    assert.match(printer!.message, /nothing is shared for printers/);
    assert.ok(existsSync(join(dir, argv[argv.indexOf('--report') + 1]!)), 'the HTML report is written');
  } finally {
    demo.child.kill('SIGINT');
    await demo.exited;
    rmSync(dir, { recursive: true, force: true });
  }
});
