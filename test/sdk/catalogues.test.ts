/**
 * The string catalogues: every catalogue (core, and each folder under handlers/ that has i18n/) has the
 * same keys in en and zh-CN with the same {params}; keys are namespaced by their owner; rendering falls
 * back zh-CN → en → key and renders nested messages in the same language.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Catalogue, LOCALES, placeholders, readCatalogueDir, toLocale, localeFromEnv, type Messages } from '../../src/i18n/index.js';
import { en as coreEn, zhCN as coreZh } from '../../src/i18n/core.js';
import { cliEn, cliZh } from '../../src/i18n/cli.js';
import { trialEn, trialZh } from '../../src/i18n/trial.js';
import { bridgeEn, bridgeZh } from '../../src/i18n/bridge.js';
import { PROJECT_ROOT } from '../../src/version.js';

const HANDLERS = join(PROJECT_ROOT, 'handlers');

/** Handler folders (`zz_` ones are tests' temporary handlers, skipped as by the manifest check). */
function handlerNames(): string[] {
  return readdirSync(HANDLERS, { withFileTypes: true }).filter((e) => e.isDirectory() && !e.name.startsWith('zz_')).map((e) => e.name).sort();
}

/**
 * Keys whose languages may use different {params}, each with its reason. cli.error.line: English prints the
 * wire type and the wire's English message; Chinese names the error in words ({type_text}) and says what it
 * means from the core catalogue ({explanation}), never the English message.
 */
const PARAMS_DIFFER = new Set(['cli.error.line']);

/** Every catalogue in the repository: [owner, { en, zh-CN }]. */
function allCatalogues(): [string, Partial<Record<(typeof LOCALES)[number], Messages>>][] {
  const out: [string, Partial<Record<(typeof LOCALES)[number], Messages>>][] = [
    ['core', { en: coreEn, 'zh-CN': coreZh }],
    ['cli', { en: cliEn, 'zh-CN': cliZh }],
    ['trial', { en: trialEn, 'zh-CN': trialZh }],
    ['bridge', { en: bridgeEn, 'zh-CN': bridgeZh }],
  ];
  for (const name of handlerNames()) {
    const dir = join(HANDLERS, name, 'i18n');
    if (existsSync(dir)) out.push([name, readCatalogueDir(dir)]);
  }
  return out;
}

test('every catalogue has the same keys and the same {params} in en and zh-CN, namespaced by its owner', () => {
  const cats = allCatalogues();
  assert.ok(cats.some(([n]) => n === 'files'), 'the files handler has a catalogue');
  for (const [owner, tables] of cats) {
    for (const l of LOCALES) assert.ok(tables[l], `${owner}: ${l} catalogue exists`);
    const en = tables.en!;
    const zh = tables['zh-CN']!;
    assert.deepEqual(Object.keys(zh).sort(), Object.keys(en).sort(), `${owner}: en and zh-CN have the same keys`);
    for (const key of Object.keys(en)) {
      assert.ok(key.startsWith(`${owner}.`), `${owner}: key ${key} starts with "${owner}."`);
      if (!PARAMS_DIFFER.has(key)) assert.deepEqual(placeholders(zh[key]!), placeholders(en[key]!), `${owner}: ${key} uses the same {params} in both languages`);
      assert.ok(en[key]!.trim() && zh[key]!.trim(), `${owner}: ${key} is not empty`);
    }
  }
});

test('handler folders with functions that describe() have a catalogue', () => {
  for (const name of handlerNames()) {
    if (!existsSync(join(HANDLERS, name, 'index.ts'))) continue;
    assert.ok(existsSync(join(HANDLERS, name, 'i18n', 'en.json')), `handlers/${name}/i18n/en.json exists`);
  }
});

test('rendering: {param} interpolation, nested messages in the same locale, fallback zh-CN → en → key', () => {
  const c = new Catalogue();
  c.add('t', 'en', { 't.greet': 'Hello {name}, {where}', 't.where': 'in {place}', 't.only_en': 'English only' });
  c.add('t', 'zh-CN', { 't.greet': '你好 {name}，{where}', 't.where': '在{place}' });
  const m = { key: 't.greet', params: { name: 'Ada', where: { key: 't.where', params: { place: 'Paris' } } } };
  assert.equal(c.render(m, 'en'), 'Hello Ada, in Paris');
  assert.equal(c.render(m, 'zh-CN'), '你好 Ada，在Paris');
  assert.equal(c.render({ key: 't.only_en' }, 'zh-CN'), 'English only');
  assert.equal(c.render({ key: 't.unknown' }, 'zh-CN'), 't.unknown');
  assert.equal(c.render({ key: 't.greet', params: { name: 3 } }), 'Hello 3, {where}', 'a missing param stays visible');
  assert.throws(() => c.add('t', 'en', { 'other.key': 'x' }), /must start with "t\."/);
});

test('locale detection: Chinese tags become zh-CN, everything else en', () => {
  assert.equal(toLocale('zh_CN.UTF-8'), 'zh-CN');
  assert.equal(toLocale('zh-Hans'), 'zh-CN');
  assert.equal(toLocale('en_GB.UTF-8'), 'en');
  assert.equal(toLocale('de'), 'en');
  assert.equal(localeFromEnv({ LANG: 'zh_CN.UTF-8' }), 'zh-CN');
  assert.equal(localeFromEnv({ LC_ALL: 'en_US.UTF-8', LANG: 'zh_CN.UTF-8' }), 'en');
});
