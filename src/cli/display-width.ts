/**
 * How many terminal columns a string takes (a CJK character two, a combining mark or a colour code none),
 * for the help's wrapping and the CLI's tables. string-width answers it, but importing it creates an
 * `Intl.Segmenter`, which loads ICU's break-iterator data: ≈ 2.7 MB of RSS (1.1 MB of the `node` binary's
 * pages, 1.6 MB allocated) kept for the life of the process. A resident `aios-device run` prints neither
 * help nor tables, so the CLI loads it (`loadDisplayWidth`, main.ts) for every other command and for
 * `run --help` only (docs/performance.md, "Issue 32: the agent's RSS at rest, split").
 */

type Width = (s: string) => number;

let loaded: Width | undefined;

/** Loads string-width; `displayWidth` uses it from then on. */
export async function loadDisplayWidth(): Promise<void> {
  loaded ??= (await import('string-width')).default;
}

/** Wide (two-column) characters: CJK ideographs and punctuation, full-width forms. */
const WIDE = /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/u;

/**
 * Columns `s` takes: string-width's answer once loaded; before that (a usage error of `run`, whose help
 * commander shows after it) one column per code point, two for the wide ranges above, none for colour codes.
 */
export function displayWidth(s: string): number {
  if (loaded) return loaded(s);
  let n = 0;
  // eslint-disable-next-line no-control-regex
  for (const c of s.replace(/\u001b\[[0-9;]*m/g, '')) n += WIDE.test(c) ? 2 : 1;
  return n;
}
