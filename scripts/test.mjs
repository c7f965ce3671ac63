#!/usr/bin/env node
// The README's test command (`npm test`): type-check, lint, then every test file with node's test
// runner. Ends with node's own summary and a plain "N passed, N failed" line, so a run that tested
// nothing cannot pass for green.
import { spawnSync, spawn } from 'node:child_process';
import { readdirSync, statSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
process.chdir(root);

function step(name, cmd, args) {
  process.stdout.write(`\n== ${name}: ${cmd} ${args.join(' ')}\n`);
  const r = spawnSync(cmd, args, { stdio: 'inherit' });
  if (r.status !== 0) {
    process.stdout.write(`\n${name} failed (exit ${r.status}).\n0 passed, 1 failed\n`);
    process.exit(r.status ?? 1);
  }
}

function findTests(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir)) {
    if (e === 'node_modules' || e === 'dist' || e.startsWith('.')) continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) findTests(p, out);
    else if (e.endsWith('.test.ts')) out.push(relative(root, p));
  }
  return out;
}

// Missing system peers are installed when we can (root), so a fresh machine works with `npm test` alone.
if (spawnSync('bash', ['scripts/install-test-deps.sh'], { stdio: 'inherit' }).status !== 0) {
  process.stdout.write('warning: some test peers are missing; the tests that need them will fail.\n');
}

const only = process.argv.slice(2);
if (!only.length) {
  step('type-check', 'npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']);
  if (existsSync('electron/tsconfig.json')) step('type-check electron', 'npx', ['tsc', '-p', 'electron/tsconfig.json', '--noEmit']);
  if (existsSync('electron/renderer/tsconfig.json')) step('type-check the window pages', 'npx', ['tsc', '-p', 'electron/renderer/tsconfig.json', '--noEmit']);
  if (existsSync('eslint.config.js')) step('lint', 'npx', ['eslint', '.']);
}

const files = only.length ? only : [...findTests('test'), ...findTests('handlers'), ...findTests('examples')].sort();
process.stdout.write(`\n== tests: ${files.length} files\n`);
// TAP explicitly: it is the piped default only up to Node 22, and the summary below reads its lines.
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', '--test-concurrency=2', '--test-timeout=900000', ...files], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, AIOS_TEST: '1' },
});
let pass = 0;
let fail = 0;
let buf = '';
// Each failure's name (a suite's and its tests') and the first lines of its diagnostics, repeated just before the summary:
// CI's record keeps only the end of the output, and the failure itself may be far above it.
const failures = [];
let open = null;
child.stdout.on('data', (d) => {
  process.stdout.write(d);
  buf += d.toString();
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    const nok = /^( *)not ok \d+ - (.*)$/.exec(line);
    if (nok) {
      open = { name: nok[2], end: `${nok[1]}  ...`, lines: [] };
      failures.push(open);
    } else if (open) {
      if (line === open.end || /^ *(ok|not ok) \d+/.test(line)) open = null;
      else if (open.lines.length < 16 && line.trim() !== '---') open.lines.push(line);
    }
    // Only the runner's top-level summary (no indentation) counts.
    const m = /^# (pass|fail|cancelled) (\d+)$/.exec(line);
    if (m && m[1] === 'pass') pass = Number(m[2]);
    if (m && m[1] !== 'pass') fail += Number(m[2]);
  }
});
// 'close', not 'exit': only then has all of the child's output (with the summary) been read.
child.on('close', (code) => {
  if (failures.length) {
    process.stdout.write(`\n== ${failures.length} failed (suites and their tests):\n`);
    for (const f of failures) process.stdout.write(`not ok - ${f.name}\n${f.lines.join('\n')}\n`);
  }
  process.stdout.write(`\n${pass} passed, ${fail} failed\n`);
  process.exit(code === 0 && pass > 0 ? 0 : code || 1);
});
