/**
 * What every screen test checks on a page: axe-core (no serious or critical violation), the pseudo-locale
 * (every visible text outside agent data comes from a catalogue, wrapped in ⟦…⟧), and a screenshot kept
 * under test-artifacts/screens/ (which .ci/run keeps as an artefact).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Page } from 'playwright-core';

/** Where screenshots go. */
export const SCREENS = join(import.meta.dirname, '..', '..', 'test-artifacts', 'screens');
/** axe-core's browser bundle, injected through the DevTools protocol (the page's CSP does not apply to it). */
export const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The serious and critical axe-core violations on the page, or inside the element with id `within`. */
export async function seriousViolations(page: Page, within?: string): Promise<{ id: string; impact: string; nodes: number }[]> {
  await page.evaluate(AXE);
  const ctx = within ? `document.getElementById(${JSON.stringify(within)})` : 'document';
  const all = await page.evaluate<{ id: string; impact: string; nodes: number }[]>(
    `axe.run(${ctx}).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })))`,
  );
  return all.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Fails when axe-core finds a serious or critical violation on `screen`. */
export async function axe(page: Page, screen: string): Promise<void> {
  assert.deepEqual(await seriousViolations(page), [], `axe-core on ${screen}`);
}

/** Writes `<SCREENS>/<name>.png` (name may hold a folder, e.g. `zh-CN/signin`) and checks it is a real image. */
export async function shot(page: Page, name: string): Promise<string> {
  const file = join(SCREENS, `${name}.png`);
  mkdirSync(dirname(file), { recursive: true });
  await page.screenshot({ path: file, fullPage: true });
  assert.ok(statSync(file).size > 1000, `${file} is a real image`);
  return file;
}

/**
 * Visible text nodes outside `[data-value]` (agent data) that are not wrapped in ⟦…⟧, inside the element
 * with id `within` (default the body), plus the title when `title` is true.
 */
export function unwrappedText(page: Page, opts: { title?: boolean; within?: string } = {}): Promise<string[]> {
  const root = opts.within ? `document.getElementById(${JSON.stringify(opts.within)})` : 'document.body';
  // Browser code as text: the project type-checks without the DOM library.
  return page.evaluate(`(() => {
    const bad = [];
    const walker = document.createTreeWalker(${root}, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = n.textContent.trim();
      const el = n.parentElement;
      if (!text || el.closest('[data-value]')) continue;
      // The <option>s of a closed <select> have no box; the select itself is visible.
      if (!(el.closest('select') ?? el).checkVisibility()) continue;
      if (!(text.startsWith('⟦') && text.endsWith('⟧'))) bad.push(text);
    }
    ${opts.title ? "if (!(document.title.startsWith('⟦') && document.title.endsWith('⟧'))) bad.push('title: ' + document.title);" : ''}
    return bad;
  })()`);
}
