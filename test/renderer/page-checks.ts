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
    const seen = new Set();
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      let text = n.textContent.trim();
      const el = n.parentElement;
      if (!text || el.closest('[data-value]')) continue;
      // A sentence with an id in it as <code data-value> is one catalogue string around it: checked whole.
      if (el.querySelector(':scope > code[data-value]')) {
        if (seen.has(el)) continue;
        seen.add(el);
        text = el.textContent.trim();
      }
      // The <option>s of a closed <select> have no box; the select itself is visible.
      if (!(el.closest('select') ?? el).checkVisibility()) continue;
      if (!(text.startsWith('⟦') && text.endsWith('⟧'))) bad.push(text);
    }
    ${opts.title ? "if (!(document.title.startsWith('⟦') && document.title.endsWith('⟧'))) bad.push('title: ' + document.title);" : ''}
    return bad;
  })()`);
}

/** The window's screens, by the `data-screen` of their nav button (electron/renderer/screens.ts). */
export type ScreenId = 'home' | 'prompt' | 'activity' | 'shares' | 'functions' | 'general' | 'about';

/**
 * Opens a screen of the window the way a person does: its button in the navigation. The buttons answer
 * once the page has loaded its catalogue and wired them (`body[data-screen]` is set then); a click before
 * that would be lost, so this waits for it first.
 */
export async function openScreen(page: Page, screen: ScreenId): Promise<void> {
  await page.locator('body[data-screen]').waitFor({ state: 'attached' });
  await page.locator(`#nav button[data-screen="${screen}"]`).click();
  await page.locator(`main > section.screen[data-screen="${screen}"]:not([hidden])`).waitFor();
}

/**
 * The visible text a person reads on the page, one line per text node: without `<code>` elements (ids),
 * agent data (`[data-value]`: names, sentences, ids the agent sent) and the language picker's options (each
 * language's name in itself); `drop`: the parameters the test passed (folder names, user ids), taken out.
 */
export async function visibleWords(page: Page, drop: readonly string[] = []): Promise<string> {
  const text = await page.evaluate<string>(`(() => {
    const out = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.textContent.trim() || el.closest('code, [data-value], #lang, script, style')) continue;
      if (!(el.closest('select') ?? el).checkVisibility()) continue;
      out.push(n.textContent);
    }
    for (const el of document.querySelectorAll('[aria-label]')) if (el.checkVisibility()) out.push(el.getAttribute('aria-label'));
    return out.join('\\n');
  })()`);
  let out = text;
  for (const d of drop) out = out.split(d).join('\n');
  return out;
}
