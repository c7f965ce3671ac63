/**
 * Issue 29 §1: each control method is defined once, in the control API's table (src/control/api.ts), and
 * no other source file spells a control method's wire name as a string: callers go through the typed
 * client, the IPC channels and the preload's functions derived from the table. Tests are not scanned
 * (they call the wire as other programs do).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { CONTROL_API } from '../../src/control/api.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** A control method's wire name (or its IPC channel): the whole string is the name. */
const METHOD_NAME = /^(aios:)?control\.[a-z_]+(\.[a-z_]+)*$/;

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'test' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sources(p, out);
    else if (/\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts') && !name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

/** The string literals of a file (quoted, template and property-name strings) whose whole text is a method name. */
export function methodNamesSpelled(file: string, text: string): { line: number; name: string }[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { line: number; name: string }[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) && METHOD_NAME.test(n.text)) {
      found.push({ line: sf.getLineAndCharacterOfPosition(n.getStart()).line + 1, name: n.text });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

test('no source file outside src/control/ spells a control method name as a string', () => {
  const files = [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'electron')), ...sources(join(ROOT, 'handlers'))];
  assert.ok(files.length > 100, 'the scan found the sources');
  const spelled: string[] = [];
  for (const f of files) {
    const rel = relative(ROOT, f).split('\\').join('/');
    if (rel.startsWith('src/control/')) continue;
    for (const s of methodNamesSpelled(rel, readFileSync(f, 'utf8'))) spelled.push(`${rel}:${s.line} ${s.name}`);
  }
  assert.deepEqual(spelled, [], 'call through the typed client (src/control/client.ts) or the table, not by name');
});

test('the scan sees a name in each way it can be spelled, and not in prose or comments', () => {
  const probe = [
    "call('control.status');",
    'call("control.grants.list");',
    'call(`control.pause`);',
    "const t = { 'control.prompts.answer': 1 };",
    "ipc.invoke('aios:control.resume');",
    '// control.status in a comment',
    "log('take the link down (control.session.offline)');",
    "on('control/notification.status');",
  ].join('\n');
  assert.deepEqual(
    methodNamesSpelled('probe.ts', probe).map((s) => s.name),
    ['control.status', 'control.grants.list', 'control.pause', 'control.prompts.answer', 'aios:control.resume'],
  );
});

test('the table names each wire method once, and each follows the naming', () => {
  const names = Object.values(CONTROL_API).map((s) => s.method);
  assert.equal(new Set(names).size, names.length, 'a wire name appears twice');
  for (const n of names) assert.match(n, METHOD_NAME);
  // Today's wire names, which other programs call: none may go or change.
  for (const n of [
    'control.status', 'control.pause', 'control.resume', 'control.prompts.list', 'control.prompts.arguments', 'control.prompts.answer',
    'control.prompts.attach', 'control.prompts.heartbeat', 'control.prompts.detach', 'control.ui.focus', 'control.decisions.list',
    'control.decisions.revoke', 'control.grants.list', 'control.grants.add', 'control.grants.remove', 'control.grants.candidates',
    'control.activity.list', 'control.signin.status', 'control.signin.start', 'control.signin.cancel', 'control.signout',
    'control.functions.list', 'control.functions.set', 'control.settings.get', 'control.settings.log_level',
    'control.session.reconnect', 'control.session.offline',
  ]) assert.ok(names.includes(n), `${n} is gone from the table`);
});
