/**
 * docs/glossary.md is the one word list every catalogue follows: a zh-CN string that uses a word the
 * glossary avoids fails here, and so does a glossary row whose word no catalogue uses (the table must stay
 * true to the catalogues).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readCatalogueDir, type Messages } from '../../src/i18n/index.js';
import { zhCN as coreZh } from '../../src/i18n/core.js';
import { cliZh } from '../../src/i18n/cli.js';
import { trialZh } from '../../src/i18n/trial.js';
import { bridgeZh } from '../../src/i18n/bridge.js';
import { ROOT } from '../helpers/stack.js';

type Row = { en: string; zh: string; avoid: string[] };

/** The glossary's table rows (| en | zh-CN | not |). */
function glossary(): Row[] {
  const md = readFileSync(join(ROOT, 'docs', 'glossary.md'), 'utf8');
  return md
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| en ') && !l.startsWith('|---'))
    .map((l) => l.split('|').slice(1, -1).map((c) => c.trim()))
    .map(([en, zh, not]) => ({ en: en!, zh: zh!, avoid: (not ?? '').split(/[,，、]/).map((s) => s.trim()).filter(Boolean) }));
}

/** Every zh-CN catalogue: [owner, messages]. */
function zhCatalogues(): [string, Messages][] {
  const out: [string, Messages][] = [['core', coreZh], ['cli', cliZh], ['trial', trialZh], ['bridge', bridgeZh]];
  out.push(['window', JSON.parse(readFileSync(join(ROOT, 'electron', 'renderer', 'zh-CN.json'), 'utf8')) as Messages]);
  for (const h of readdirSync(join(ROOT, 'handlers'))) {
    const dir = join(ROOT, 'handlers', h, 'i18n');
    if (existsSync(dir)) {
      const zh = readCatalogueDir(dir)['zh-CN'];
      if (zh) out.push([h, zh]);
    }
  }
  return out;
}

test('the glossary has rows, each with an English and a Chinese word', () => {
  const rows = glossary();
  assert.ok(rows.length >= 10, `${rows.length} rows`);
  for (const r of rows) assert.ok(r.en && /[\u4e00-\u9fff]/.test(r.zh), JSON.stringify(r));
});

test('no zh-CN string uses a word the glossary avoids', () => {
  const found: string[] = [];
  const rows = glossary();
  for (const [owner, msgs] of zhCatalogues()) {
    for (const [key, text] of Object.entries(msgs)) {
      for (const r of rows) for (const w of r.avoid) if (text.includes(w)) found.push(`${owner} ${key}: "${w}" (use "${r.zh}" for ${r.en}): ${text}`);
    }
  }
  assert.deepEqual(found, []);
});

test('every glossary word is used by some zh-CN catalogue', () => {
  const all = zhCatalogues().flatMap(([, m]) => Object.values(m)).join('\n');
  const unused = glossary().filter((r) => !all.includes(r.zh)).map((r) => `${r.en} → ${r.zh}`);
  assert.deepEqual(unused, []);
});
