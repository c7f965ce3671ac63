/**
 * A clone of the repository is complete: every relative link in README.md and docs/ resolves to a file
 * (and, for `#anchor`, a heading) inside the repository, and no document sends the reader to a file the
 * repository does not hold (`../shared/…`, the spec's `PROTOCOL.md`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { ROOT } from '../helpers/stack.js';

function markdown(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) markdown(p, out);
    else if (e.endsWith('.md')) out.push(p);
  }
  return out;
}

const docs = [join(ROOT, 'README.md'), ...markdown(join(ROOT, 'docs'))];

/** GitHub's heading slugs: lower case, punctuation dropped, spaces to hyphens. */
function slugs(file: string): Set<string> {
  const out = new Set<string>();
  for (const m of readFileSync(file, 'utf8').matchAll(/^#{1,6}\s+(.+)$/gm)) {
    out.add(m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-'));
  }
  return out;
}

/** Problems with the links of one markdown text (exported shape for the self-check below). */
function linkProblems(file: string, text: string): string[] {
  const bad: string[] = [];
  // Inline links and images, outside code spans: [text](target) / ![alt](target).
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  for (const m of prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [path, anchor] = target.split('#') as [string, string | undefined];
    const abs = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
    if (abs !== ROOT && !abs.startsWith(ROOT + sep)) {
      bad.push(`${relative(ROOT, file)}: ${target} leaves the repository`);
      continue;
    }
    if (!existsSync(abs)) {
      bad.push(`${relative(ROOT, file)}: ${target} does not exist`);
      continue;
    }
    if (anchor && abs.endsWith('.md') && !slugs(abs).has(anchor.toLowerCase())) bad.push(`${relative(ROOT, file)}: ${target} names no heading`);
  }
  if (/\.\.\/shared\//.test(text)) bad.push(`${relative(ROOT, file)}: refers to ../shared/, outside the repository`);
  if (/PROTOCOL\.md/.test(text)) bad.push(`${relative(ROOT, file)}: refers to PROTOCOL.md, which the repository does not hold (docs/protocol.md states the contract)`);
  return bad;
}

test('the link check finds a broken, an escaping and a good link', () => {
  const f = join(ROOT, 'docs', 'x.md');
  assert.deepEqual(linkProblems(f, '[ok](protocol.md) [web](https://example.com) `[code](nope.md)`'), []);
  assert.match(linkProblems(f, '[gone](nope.md)')[0] ?? '', /does not exist/);
  assert.match(linkProblems(f, '[out](../../shared/spec/PROTOCOL.md)')[0] ?? '', /leaves the repository/);
  assert.match(linkProblems(f, '[anchor](protocol.md#no-such-heading)')[0] ?? '', /names no heading/);
});

test('every relative link in README.md and docs/ resolves inside the repository', () => {
  let links = 0;
  const bad: string[] = [];
  for (const f of docs) {
    const text = readFileSync(f, 'utf8');
    links += [...text.matchAll(/\]\((?!https?:)[^)]+\)/g)].length;
    bad.push(...linkProblems(f, text));
  }
  assert.ok(links > 20, `only ${links} relative links found: is the scan reading the docs?`);
  assert.deepEqual(bad, []);
});

test('docs/protocol.md states the contract and names the version the code speaks', async () => {
  const text = readFileSync(join(ROOT, 'docs', 'protocol.md'), 'utf8');
  const { CLIENT_PROTOCOL_VERSION } = await import('../../src/protocol/messages.js');
  const { BRIDGE_PROTOCOL_VERSIONS } = await import('../../src/bridge/versions.js');
  const { ERRORS } = await import('../../src/protocol/errors.js');
  const esc = (v: string) => v.replace('.', '\\.');
  // What the reference bridge answers, and what the agent offers, as the code has them.
  assert.match(text, new RegExp(`speaks \\*\\*${BRIDGE_PROTOCOL_VERSIONS.map(esc).join(' and ')}\\*\\*`));
  assert.match(text, new RegExp(`"protocol_version": "${esc(CLIENT_PROTOCOL_VERSION)}"`));
  // Every error type of the catalogue is in its table, with its code.
  for (const [type, e] of Object.entries(ERRORS)) assert.match(text, new RegExp(`\\| ${e.code} \\| \`${type}\` \\|`), type);
  for (const m of ['aios/session.hello', 'aios/function.invoke', 'aios/function.cancel', 'aios/call.report', 'aios/notification.call_state', 'aios/function.list', 'aios/notification.tools_changed', 'aios/call.get']) assert.ok(text.includes(m), m);
});

/**
 * Paths into the code that a text names (`src/…`, `handlers/…`, `test/…`, `bench/…`, `scripts/…`,
 * `electron/…`) and that do not exist. Fenced code blocks are examples and commands (a handler the reader
 * is about to scaffold), and a placeholder (`<name>`, `*`, `…`) names no one file, so both are left out;
 * markdown links (their text and target, relative to the document) are the link check's. `x.js` may name the `x.ts` it is compiled from.
 */
function missingCodePaths(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '');
  const out: string[] = [];
  for (const m of prose.matchAll(/(?<![\w./<>([@-])((?:src|handlers|test|bench|scripts|electron)\/[^\s`'"()[\],;:]*)/g)) {
    const p = m[1]!.replace(/[.]+$/, '');
    if (/[<>*{}…]|\.\.\./.test(p)) continue;
    const abs = join(ROOT, p);
    if (existsSync(abs) || (p.endsWith('.js') && existsSync(abs.replace(/\.js$/, '.ts')))) continue;
    out.push(p);
  }
  return out;
}

test('the code-path check finds a path that is gone and passes placeholders, code blocks and links', () => {
  assert.deepEqual(missingCodePaths('`src/agent/outcomes.ts` and src/nowhere/x.ts.'), ['src/agent/outcomes.ts', 'src/nowhere/x.ts']);
  assert.deepEqual(missingCodePaths('`src/protocol/peer.ts`, `src/sdk/index.js`, `src/app/`, `handlers/<name>/i18n/`, [handlers/x.md](handlers/x.md)\n```\nnode scripts/test.mjs handlers/demo/test/demo.test.ts\n```'), []);
});

test('every src/, handlers/, test/ (…) path that README.md and docs/ name exists', () => {
  let named = 0;
  const bad: string[] = [];
  for (const f of docs) {
    const text = readFileSync(f, 'utf8');
    named += [...text.matchAll(/`src\//g)].length;
    for (const p of missingCodePaths(text)) bad.push(`${relative(ROOT, f)}: ${p}`);
  }
  assert.ok(named > 50, `only ${named} code paths found: is the scan reading the docs?`);
  assert.deepEqual(bad, [], 'these documents name files that do not exist (moved or renamed?)');
});
