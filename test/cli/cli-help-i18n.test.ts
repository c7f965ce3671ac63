/**
 * `--help` and commander's own words speak the user's language: every description of the command tree
 * comes from the `cli.help.*` catalogue strings, and commander's titles, "(default: …)" notes and parse
 * errors are replaced by the catalogue's. The CLI runs as a child process under zh_CN.UTF-8 and C.UTF-8;
 * the tree is also walked in this process under both locales, so an English literal put back into any
 * `.option()` fails here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { cliRun, ROOT } from '../helpers/stack.js';
import { cliEn, cliZh, type CliKey } from '../../src/i18n/cli.js';
import { buildProgram } from '../../src/cli/program.js';
import stringWidth from 'string-width';
import { LocalisedCommand, localisedHelp, localiseError, wrap } from '../../src/cli/localised-command.js';
import { loadDisplayWidth } from '../../src/cli/display-width.js';

// As main.ts does for every command but a resident `run`.
await loadDisplayWidth();

const ZH = { LC_ALL: 'zh_CN.UTF-8', LANG: 'zh_CN.UTF-8' };
const EN = { LC_ALL: 'C.UTF-8' };
const HAN = /[\u4e00-\u9fff]/;

const helpKeys = (Object.keys(cliEn) as CliKey[]).filter((k) => k.startsWith('cli.help.'));
/** Help wraps lines and pads columns: compare texts with all white space removed. */
const squash = (s: string): string => s.replace(/\s+/g, '');
/** The literal parts of a template (between its `{param}`s) long enough to be telling. */
const fragments = (template: string): string[] => template.split(/\{[A-Za-z_]+\}/).map(squash).filter((f) => f.length >= 8);

/** commander's own English words, which must not show in Chinese output. */
const COMMANDER_ENGLISH = ['Usage:', 'Options:', 'Commands:', 'Arguments:', 'display help for command', 'output the version number', '(default:', 'error:', 'Did you mean', 'unknown option', 'missing required argument'];

/** Asserts `out` holds no English sentence of the help catalogue and none of commander's English words. */
function assertNoEnglish(out: string, what: string): void {
  const flat = squash(out);
  for (const k of helpKeys) {
    for (const f of fragments(cliEn[k])) assert.ok(!flat.includes(f), `${what}: English text of ${k} ("${f}") in:\n${out}`);
  }
  for (const w of COMMANDER_ENGLISH) assert.ok(!out.includes(w), `${what}: commander's "${w}" in:\n${out}`);
}

/** Asserts `out` holds each catalogue string (rendered without params, as squashed text). */
function assertHas(out: string, texts: string[], what: string): void {
  const flat = squash(out);
  for (const t of texts) assert.ok(flat.includes(squash(t)), `${what}: "${t}" missing from:\n${out}`);
}

test('aios-device --help: Chinese titles and descriptions under zh_CN, English under C; exit 0 in both', async () => {
  const zh = await cliRun(['--help'], ZH);
  const en = await cliRun(['--help'], EN);
  assert.equal(zh.code, 0, zh.err);
  assert.equal(en.code, 0, en.err);
  assertHas(zh.out, [cliZh['cli.help.word.usage'], cliZh['cli.help.word.options'], cliZh['cli.help.word.commands'], cliZh['cli.help.program'], cliZh['cli.help.version'], cliZh['cli.help.help_option'], cliZh['cli.help.help_command'], cliZh['cli.help.invoke'], cliZh['cli.help.trial'], cliZh['cli.help.hash_password']], 'zh --help');
  assertNoEnglish(zh.out, 'zh --help');
  assert.match(zh.out, /^用法：aios-device \[选项\] \[命令\]/, 'the usage line in Chinese: no space after the full-width colon, the placeholders translated');
  assertHas(en.out, [cliEn['cli.help.word.usage'], cliEn['cli.help.word.options'], cliEn['cli.help.word.commands'], cliEn['cli.help.program'], cliEn['cli.help.version'], cliEn['cli.help.help_option'], cliEn['cli.help.invoke'], cliEn['cli.help.trial']], 'en --help');
  assert.doesNotMatch(en.out, HAN, 'no Chinese in the English help');
});

test('invoke --help: options, notes and defaults in the user language', async () => {
  const zh = await cliRun(['invoke', '--help'], ZH);
  const en = await cliRun(['invoke', '--help'], EN);
  assert.equal(zh.code, 0, zh.err);
  assert.equal(en.code, 0, en.err);
  assertHas(zh.out, [cliZh['cli.help.invoke'], cliZh['cli.help.invoke.blob'], cliZh['cli.help.opt.json_record'], cliZh['cli.help.runtime.token'], '（默认："{}"）', ' (aios-device invoke)"）'], 'zh invoke --help');
  assertNoEnglish(zh.out, 'zh invoke --help');
  // Not a terminal, so commander wraps at 80 columns; a Chinese character takes two of them.
  const wide = zh.out.split('\n').filter((l) => stringWidth(l) > 80);
  assert.deepEqual(wide, [], 'zh invoke --help lines wider than 80 columns');
  assert.ok(zh.out.split('\n').some((l) => HAN.test(l) && stringWidth(l) > 70), `no Chinese line near the width, so nothing was wrapped:\n${zh.out}`);
  // Flags, argument names and file names stay as typed.
  assert.match(zh.out, /--save-blob <file>/);
  assert.match(zh.out, /--token-file 或 AIOS_RUNTIME_TOKEN/);
  assertHas(en.out, [cliEn['cli.help.invoke'], cliEn['cli.help.invoke.blob'], 'arguments as a JSON object (default: "{}")', 'Usage: aios-device invoke [options] <function>'], 'en invoke --help');
  assert.doesNotMatch(en.out, HAN);
});

test('decisions --help: the argument list, its title and the default of an argument', async () => {
  const zh = await cliRun(['decisions', '--help'], ZH);
  assert.equal(zh.code, 0, zh.err);
  assertHas(zh.out, [cliZh['cli.help.word.arguments'], `${cliZh['cli.help.decisions.action']}（默认："list"）`, cliZh['cli.help.decisions.id'], cliZh['cli.help.opt.data_dir']], 'zh decisions --help');
  assertNoEnglish(zh.out, 'zh decisions --help');
  const en = await cliRun(['decisions', '--help'], EN);
  assertHas(en.out, ['Arguments:', 'list or revoke (default: "list")'], 'en decisions --help');
});

test("commander's parse errors are in the user language, with the help after them, and exit 64 as before", async () => {
  const cases: { args: string[]; zh: string; en: string }[] = [
    { args: ['invoke', 'device.info', '--frob'], zh: '错误：未知选项 --frob', en: "error: unknown option '--frob'" },
    { args: ['invoke', 'device.info', '--bolb', 'x'], zh: '错误：未知选项 --bolb\n（您是想用 --blob 吗？）', en: "error: unknown option '--bolb'\n(Did you mean --blob?)" },
    { args: ['invoke'], zh: '错误：缺少必需的参数 function', en: "error: missing required argument 'function'" },
    { args: ['invoke', 'device.info', '--args'], zh: '错误：选项 -a, --args <json> 缺少取值', en: "error: option '-a, --args <json>' argument missing" },
    { args: ['bridge'], zh: '错误：未指定必需的选项 -c, --config <file>', en: "error: required option '-c, --config <file>' not specified" },
    { args: ['decisions', 'list', '1', '2'], zh: '错误：decisions 的参数过多（它接受 2 个，收到 3 个）', en: "error: too many arguments for 'decisions' (it takes 2, got 3)" },
    { args: ['frobnicate'], zh: '错误：未知命令 frobnicate', en: "error: unknown command 'frobnicate'" },
  ];
  for (const c of cases) {
    const [zh, en] = await Promise.all([cliRun(c.args, ZH), cliRun(c.args, EN)]);
    assert.equal(zh.code, 64, `${c.args.join(' ')}: ${zh.err}`);
    assert.equal(en.code, 64, `${c.args.join(' ')}: ${en.err}`);
    assert.ok(zh.err.startsWith(c.zh + '\n'), `zh ${c.args.join(' ')}:\n${zh.err}`);
    assert.ok(en.err.startsWith(c.en + '\n'), `en ${c.args.join(' ')}:\n${en.err}`);
    assertNoEnglish(zh.err, `zh ${c.args.join(' ')}`);
    assert.match(zh.err, /\n用法：aios-device/, 'the help follows the error');
    assert.equal(zh.out, '');
  }
});

/** Every command of the tree, depth first. */
function commands(c: Command): Command[] {
  return [c, ...c.commands.flatMap(commands)];
}

/** Every text a person reads in the tree's help: command, option, argument, help option and help command descriptions. */
function helpTexts(program: Command): { where: string; text: string }[] {
  const out: { where: string; text: string }[] = [];
  for (const c of commands(program)) {
    const help = c.createHelp();
    const name = c.parent ? `${c.parent.name()} ${c.name()}` : c.name();
    out.push({ where: name, text: c.description() });
    for (const o of help.visibleOptions(c)) out.push({ where: `${name} ${o.flags}`, text: help.optionDescription(o) });
    for (const a of c.registeredArguments) if (a.description) out.push({ where: `${name} <${a.name()}>`, text: help.argumentDescription(a) });
    for (const s of help.visibleCommands(c)) out.push({ where: `${name} → ${s.name()}`, text: help.subcommandDescription(s) });
  }
  return out;
}

/** The tree as built in `env`'s locale (the locale is read when the tree is built). */
function programIn(env: Record<string, string>): Command {
  const saved = { LC_ALL: process.env['LC_ALL'], LC_MESSAGES: process.env['LC_MESSAGES'], LANG: process.env['LANG'] };
  try {
    delete process.env['LC_MESSAGES'];
    Object.assign(process.env, { LANG: env['LC_ALL'] }, env);
    return buildProgram();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test('every description in the command tree is a catalogue string: Chinese under zh_CN, English under C', () => {
  const zh = helpTexts(programIn(ZH));
  const en = helpTexts(programIn(EN));
  assert.ok(zh.length > 150, `the walk found ${zh.length} texts; the tree has many more than 150`);
  assert.deepEqual(zh.map((t) => t.where), en.map((t) => t.where), 'the same tree in both locales');
  const notChinese = zh.filter((t) => !t.text || !HAN.test(t.text)).map((t) => `${t.where}: ${JSON.stringify(t.text)}`);
  assert.deepEqual(notChinese, [], 'texts with no Chinese under zh_CN (an English literal in the code?)');
  const notEnglish = en.filter((t) => !t.text || HAN.test(t.text)).map((t) => `${t.where}: ${JSON.stringify(t.text)}`);
  assert.deepEqual(notEnglish, [], 'texts with Chinese (or empty) under C');
  // Each English text starts with a help catalogue sentence (its params filled in, its notes after it).
  const heads = helpKeys.map((k) => cliEn[k].split('{')[0]!).filter((h) => h.length >= 4);
  const unknown = en.filter((t) => !heads.some((h) => t.text.startsWith(h))).map((t) => `${t.where}: ${t.text}`);
  assert.deepEqual(unknown, [], 'English texts that are not from the cli.help catalogue');
});

/** The sources of the command line, where the help keys are used. */
function cliSources(dir = join(ROOT, 'src', 'cli')): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((e) => (e.isDirectory() ? cliSources(join(dir, e.name)) : e.name.endsWith('.ts') ? readFileSync(join(dir, e.name), 'utf8') : ''))
    .join('\n');
}

test('every cli.help key is used by the command line, and every cli string has its own Chinese text', () => {
  const src = cliSources();
  const unused = helpKeys.filter((k) => !src.includes(`'${k}'`));
  assert.deepEqual(unused, [], 'cli.help keys no code uses');
  assert.ok(helpKeys.length > 100, `${helpKeys.length} help keys`);
  // Identical in both languages on purpose: a column heading that is the same abbreviation in Chinese.
  const SAME = new Set<string>(['cli.col.id']);
  const same = (Object.keys(cliEn) as CliKey[]).filter((k) => !SAME.has(k) && cliZh[k] === cliEn[k]);
  assert.deepEqual(same, [], 'zh-CN strings copied from en');
  for (const k of SAME) assert.equal(cliZh[k as CliKey], cliEn[k as CliKey], `${k} is listed as identical`);
});

test('wrapping counts a Chinese character as two columns and breaks between words, never before a closing mark', () => {
  // commander pads the help's columns with this width, so it must count terminal columns.
  const width = localisedHelp().displayWidth!;
  assert.equal(width('中文ab'), 6);
  assert.equal(width('\x1b[1m用法：\x1b[22m'), 6);
  const text = cliZh['cli.help.invoke.save_blob'];
  const lines = wrap(text, 30).split('\n');
  assert.ok(lines.length >= 3, lines.join('\n'));
  for (const l of lines) {
    assert.ok(stringWidth(l) <= 30, `"${l}" is ${stringWidth(l)} columns`);
    assert.doesNotMatch(l, /^[，。；：）]/, `"${l}" starts with a closing mark`);
    assert.doesNotMatch(l, /[（“]$/, `"${l}" ends with an opening mark`);
  }
  assert.equal(squash(lines.join('')), squash(text), 'nothing lost or added');
  // English still wraps at spaces only.
  assert.deepEqual(wrap('run the device agent headless', 12).split('\n'), ['run the', 'device agent', 'headless']);
});

test('an error commander reports that the catalogue does not know keeps commander’s own message', () => {
  const cmd = new LocalisedCommand('x');
  const msg = "error: option '--a' cannot be used with option '--b'";
  assert.equal(localiseError(cmd, msg, 'commander.conflictingOption'), msg);
  assert.equal(localiseError(cmd, msg, undefined), msg);
});
