/**
 * The window's catalogues (`electron/renderer/en.json`, `zh-CN.json`) keep each screen's keys in a block of
 * their own, so that helpers adding strings to different screens at the same time merge without conflicts.
 * One check for every screen test: the keys a page uses are in both catalogues, and its keys are one block.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The window's renderer folder (its pages, scripts and catalogues). */
export const RENDERER = join(import.meta.dirname, '..', '..', 'electron', 'renderer');

/** The text of one file of the renderer folder. */
export function rendererFile(name: string): string {
  return readFileSync(join(RENDERER, name), 'utf8');
}

/**
 * Asserts that `en` and `zh-CN` both hold every key in `used`, and that in each the keys `mine` picks are
 * one block after other keys (nothing of another screen between them), the catalogue's last when `atEnd`.
 */
export function assertCatalogueBlock(used: readonly string[], mine: (key: string) => boolean, what: string, atEnd = false): void {
  const tables = { en: rendererFile('en.json'), 'zh-CN': rendererFile('zh-CN.json') };
  for (const [locale, text] of Object.entries(tables)) {
    const table = JSON.parse(text) as Record<string, string>;
    for (const k of used) assert.ok(table[k], `${k} in the ${locale} catalogue`);
    const keys = Object.keys(table);
    const first = keys.findIndex(mine);
    const count = keys.filter(mine).length;
    assert.ok(first > 0 && keys.slice(first, first + count).every(mine), `${locale}: the ${what} keys are one block`);
    if (atEnd) assert.equal(first + count, keys.length, `${locale}: the ${what} block is the last`);
  }
}
