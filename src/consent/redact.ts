/**
 * Argument summaries for the audit trail and logs. A summary keeps the shape of the arguments (keys,
 * types, lengths), numbers, booleans and things that look like file paths or file names, and nothing
 * else: no file contents, no free text, no tokens, no secret-looking values.
 */

/** Keys whose values are always withheld, whatever they hold. */
export const SECRET_KEY = /token|secret|password|passwd|key|auth|cookie|credential|session|signature/i;
/** Keys that carry file contents or message bodies. */
export const CONTENT_KEY = /^(data|content|contents|text|body|payload|bytes|base64|write|message)$/i;

const MAX_DEPTH = 4;
const MAX_ITEMS = 5;
const MAX_KEYS = 40;

/** Shannon entropy in bits per character. */
function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** True for strings that look like keys, tokens, hashes or base64 data. */
export function looksSecret(s: string): boolean {
  if (s.length < 16) return false;
  if (/^(sk|pk|ghp|gho|xox[abp]|eyJ)[A-Za-z0-9_-]/.test(s)) return true;
  // A long unbroken run of mixed letters and digits is how keys, hashes and base64 look; words
  // joined by '-', '_' or '.' (file names, slugs, UUIDs) break into short runs.
  const longest = (s.match(/[A-Za-z0-9+/=]{20,}/g) ?? []).sort((a, b) => b.length - a.length)[0];
  return longest !== undefined && /[0-9]/.test(longest) && /[A-Za-z]/.test(longest) && entropy(longest) > 3.5;
}

const PATH_LIKE = /^(\/|~\/|\.{1,2}\/|[A-Za-z]:[\\/]|\\\\)/;
const FILE_NAME = /^[\w ()[\].,+-]{1,128}\.[A-Za-z0-9]{1,10}$/;

/** A path or file name worth keeping, with any secret-looking segment masked; undefined otherwise. */
function keepPath(s: string): string | undefined {
  if (s.length > 1024 || /[\r\n\t]/.test(s)) return undefined;
  if (PATH_LIKE.test(s)) {
    if (/[?#=&]/.test(s)) return undefined;
    return s
      .split(/([\\/])/)
      .map((seg) => (seg !== '/' && seg !== '\\' && looksSecret(seg) ? '<redacted>' : seg))
      .join('');
  }
  if (FILE_NAME.test(s) && !looksSecret(s)) return s;
  return undefined;
}

/** A JSON-safe summary of `value`; strings become `<string:N>` unless they are paths or file names. */
export function summarize(value: unknown, key = '', depth = 0): unknown {
  if (key && SECRET_KEY.test(key)) return '<redacted>';
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'string') {
    if (key && CONTENT_KEY.test(key)) return `<string:${value.length}>`;
    return keepPath(value) ?? `<string:${value.length}>`;
  }
  if (Array.isArray(value)) {
    if (depth >= MAX_DEPTH) return `<array:${value.length}>`;
    const items = value.slice(0, MAX_ITEMS).map((v) => summarize(v, key, depth + 1));
    if (value.length > MAX_ITEMS) items.push(`<+${value.length - MAX_ITEMS} more>`);
    return items;
  }
  if (typeof value === 'object') {
    if (depth >= MAX_DEPTH) return '<object>';
    const out: Record<string, unknown> = {};
    const entries = Object.entries(value as Record<string, unknown>);
    for (const [k, v] of entries.slice(0, MAX_KEYS)) {
      // A secret can sit in the key itself (e.g. a header map); withhold such keys' names too.
      const name = looksSecret(k) ? `<key:${k.length}>` : k;
      out[name] = summarize(v, k, depth + 1);
    }
    if (entries.length > MAX_KEYS) out['<more>'] = entries.length - MAX_KEYS;
    return out;
  }
  return `<${typeof value}>`;
}

/** The summary of a call's arguments as a compact JSON string (what the audit trail stores). */
export function redactArgs(args: Record<string, unknown> | undefined): string | null {
  if (args === undefined) return null;
  return JSON.stringify(summarize(args));
}
