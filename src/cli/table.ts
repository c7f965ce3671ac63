/**
 * Plain-text tables for the terminal, aligned by display width: a CJK character takes two columns and a
 * combining mark none, so `padEnd` (which counts UTF-16 units) misaligns a Chinese table. string-width says
 * how many columns a string takes (display-width.ts: loaded by main.ts for every command but `run`).
 */
import { displayWidth } from './display-width.js';

/** `s` padded with spaces to `width` display columns (never cut). */
export function padDisplay(s: string, width: number): string {
  const w = displayWidth(s);
  return w >= width ? s : s + ' '.repeat(width - w);
}

/** Rows joined into columns two spaces apart, each column as wide as its widest cell; trailing spaces trimmed. */
export function table(rows: readonly (readonly string[])[]): string {
  const n = Math.max(0, ...rows.map((r) => r.length));
  const widths = Array.from({ length: n }, (_, i) => Math.max(0, ...rows.map((r) => displayWidth(r[i] ?? ''))));
  return rows.map((r) => r.map((c, i) => padDisplay(c, widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}
