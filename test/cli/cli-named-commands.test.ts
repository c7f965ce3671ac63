/**
 * Every command a message or a document tells a person to run exists (issue 14: the CLI said "run
 * `adapters refresh`", which did not exist). Scans the sources and the docs for `aios-device X [Y]` and
 * for a bare `X Y` naming a command with subcommands, and checks each against the real command tree.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import { ROOT } from '../helpers/stack.js';

function files(dir: string, exts: string[], out: string[] = []): string[] {
  for (const e of readdirSync(dir)) {
    if (e === 'node_modules' || e.startsWith('.') || e === 'dist') continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) files(p, exts, out);
    else if (exts.some((x) => e.endsWith(x))) out.push(p);
  }
  return out;
}

const program = buildProgram();
const top = new Map<string, Command>(program.commands.map((c) => [c.name(), c]));
const withSubcommands = [...top.values()].filter((c) => c.commands.length > 0).map((c) => c.name());

/** What is wrong with `words` as a command line, or undefined when it names a real command. */
function problem(words: string[]): string | undefined {
  const [first, second] = words;
  const cmd = first ? top.get(first) : undefined;
  if (!cmd) return `no command "${first}"`;
  if (cmd.commands.length && second && !second.startsWith('-') && !/^[A-Z<[]/.test(second)) {
    if (!cmd.commands.some((c) => c.name() === second || c.aliases().includes(second))) return `"${first}" has no subcommand "${second}"`;
  }
  return undefined;
}

test('the command check itself tells a real command from a made-up one', () => {
  assert.equal(problem(['adapters', 'list']), undefined);
  assert.equal(problem(['invoke', 'device.info']), undefined);
  assert.match(problem(['adapters', 'frobnicate']) ?? '', /no subcommand/);
  assert.match(problem(['frobnicate']) ?? '', /no command/);
});

test('every command named in a message or a document exists', () => {
  const sources = [...files(join(ROOT, 'src'), ['.ts']), ...files(join(ROOT, 'electron'), ['.ts', '.html', '.js']), ...files(join(ROOT, 'docs'), ['.md']), join(ROOT, 'README.md')];
  const named = new RegExp('`(?:aios-device|node dist/src/cli/main\\.js) ([a-z][a-z-]*)(?: ([^`\\s]+))?', 'g');
  // A bare `adapters refresh` counts only as a whole command line (options and placeholders may follow),
  // so a template literal such as `adapter id ${id} …` is not mistaken for one.
  const bare = new RegExp('`((?:' + withSubcommands.join('|') + ')) ([a-z][a-z|-]*)((?: (?:--?[a-z][\\w-]*|[A-Z][A-Z_-]*|<[^>]+>|\\[[^\\]]+\\]))*)`', 'g');
  const bad: string[] = [];
  let seen = 0;
  for (const f of sources) {
    const text = readFileSync(f, 'utf8');
    for (const re of [named, bare]) {
      for (const m of text.matchAll(re)) {
        seen++;
        // `adapter validate|sign|verify` names three commands.
        for (const sub of m[2] ? m[2].split('|') : [undefined]) {
          const why = problem([m[1]!, ...(sub ? [sub] : [])]);
          if (why) bad.push(`${relative(ROOT, f)}: ${m[0]} (${why})`);
        }
      }
    }
  }
  assert.ok(seen > 20, `the scan found ${seen} command mentions; it should find many`);
  assert.deepEqual(bad, []);
});
