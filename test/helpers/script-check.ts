/**
 * Checks that a page a person reads is in one language: in zh-CN no Latin-script phrase of three words or more
 * (identifiers in `<code>` and the parameters a test passes are taken out first), in en no Chinese characters.
 */

/** Latin-script phrases of three words or more in `text`. */
export function latinPhrases(text: string): string[] {
  return [...text.matchAll(/[A-Za-z][A-Za-z'’-]*(?:[ \t,.:;]+[A-Za-z][A-Za-z'’-]*){2,}/g)].map((m) => m[0]);
}

/** Runs of Chinese characters in `text`. */
export function hanRuns(text: string): string[] {
  return [...text.matchAll(/\p{Script=Han}+/gu)].map((m) => m[0]);
}

/**
 * What a person reads on an HTML page: element text, `title`, `aria-label` and `placeholder` values; without
 * `<code>` elements (identifiers), `<style>`, the language switch (each language's name in itself) and hidden
 * inputs. Entities are decoded; each piece is one line so phrases do not run across elements.
 */
export function readableText(html: string, drop: readonly string[] = []): string {
  const attrs = [...html.matchAll(/\s(?:title|aria-label|placeholder)="([^"]*)"/g)].map((m) => m[1]!);
  const body = html
    .replace(/<style[\s\S]*?<\/style>/g, '')
    .replace(/<nav class="lang"[\s\S]*?<\/nav>/g, '')
    .replace(/<code>[\s\S]*?<\/code>/g, '\n')
    .replace(/<[^>]+>/g, '\n');
  let text = [...attrs, body].join('\n').replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);
  for (const d of drop) text = text.split(d).join('\n');
  return text;
}
