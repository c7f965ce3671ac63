/**
 * Tests wait through the one helper (`until()` in test/helpers/wait.ts): a hand-written polling loop in a test
 * file waits forever when the condition never comes, or fails without saying what it waited for. This scans
 * every test source for the shapes such loops take, and checks the scan itself on a sample of each.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
const HELPER = join('test', 'helpers', 'wait.ts');

/** A polling loop (`while (…) await new Promise(…)`) or a wait helper of the file's own. */
const SHAPES: RegExp[] = [
  /while\s*\([^\n]*\)\s*await\s+new\s+Promise/,
  /while\s*\([^\n]*\)\s*\{\s*\n?\s*await\s+new\s+Promise\(\s*\(?\w+\)?\s*=>\s*set(Timeout|Immediate)/,
  /async\s+function\s+(waitFor|waitUntil|pollUntil|eventually|until)\b|const\s+(waitFor|waitUntil|pollUntil|eventually|until)\s*=\s*async\b/,
];

/**
 * Files allowed a loop, each with its reason. The journal's crash test writes a script for a child process that
 * it then SIGKILLs mid catch-up: the loop runs there, in a separate program, not in the test.
 */
const ALLOWED = new Map([[join('test', 'agent', 'journal.test.ts'), 'a child process script']]);

function own(src: string): string[] {
  return SHAPES.filter((re) => re.test(src)).map(String);
}

function testSources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir)) {
    if (e === 'node_modules' || e === 'dist' || e.startsWith('.')) continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) testSources(p, out);
    else if (e.endsWith('.ts') && (p.includes(`${join('test', '')}`) || p.includes(`${join('', 'test', '')}`))) out.push(p);
  }
  return out;
}

test('the scan finds each shape of a hand-written wait', () => {
  assert.ok(own('while (!done) await new Promise((r) => setTimeout(r, 10));').length);
  assert.ok(own('while (x.length === 0) {\n  await new Promise((r) => setImmediate(r));\n}').length);
  assert.ok(own('async function waitFor(cond: () => boolean) {}').length);
  assert.ok(own('const waitFor = async (pred) => {}').length);
  assert.equal(own("await until(() => held.length, 10_000, 'the fetch');").length, 0);
});

test('no test file polls with a loop or a wait helper of its own', () => {
  const roots = [join(ROOT, 'test'), ...readdirSync(join(ROOT, 'handlers')).map((h) => join(ROOT, 'handlers', h, 'test'))];
  const found: string[] = [];
  for (const r of roots) {
    let files: string[];
    try {
      files = testSources(r);
    } catch {
      continue; // a handler without tests
    }
    for (const f of files) {
      const rel = relative(ROOT, f);
      if (rel === HELPER || rel === join('test', 'lint', 'one-wait-helper.test.ts') || ALLOWED.has(rel)) continue;
      for (const shape of own(readFileSync(f, 'utf8'))) found.push(`${rel}: ${shape}`);
    }
  }
  assert.deepEqual(found, [], 'use until() from test/helpers/wait.ts');
});
