/**
 * Glob patterns for `list_dir` and `search`: `*` and `?` within one name, `**` across folders, `[abc]`
 * classes, `{a,b}` alternatives. Matching is case-insensitive on Windows and macOS, exact elsewhere.
 */

const CASE_INSENSITIVE = process.platform === 'win32' || process.platform === 'darwin';

function escape(ch: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(ch) ? `\\${ch}` : ch;
}

/** Compiles a glob into a RegExp matching a whole `/`-separated relative path (or a single name). */
export function compileGlob(glob: string): RegExp {
  let re = '';
  let i = 0;
  let braces = 0;
  while (i < glob.length) {
    const ch = glob[i]!;
    if (ch === '*') {
      if (glob[i + 1] === '*') {
        i += 2;
        if (glob[i] === '/') {
          i++;
          re += '(?:.*/)?';
        } else {
          re += '.*';
        }
        continue;
      }
      re += '[^/]*';
    } else if (ch === '?') {
      re += '[^/]';
    } else if (ch === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end === -1) {
        re += '\\[';
      } else {
        let body = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
        if (body.startsWith('!')) body = '^' + body.slice(1);
        re += `[${body}]`;
        i = end;
      }
    } else if (ch === '{') {
      braces++;
      re += '(?:';
    } else if (ch === '}' && braces > 0) {
      braces--;
      re += ')';
    } else if (ch === ',' && braces > 0) {
      re += '|';
    } else {
      re += escape(ch);
    }
    i++;
  }
  while (braces-- > 0) re += ')';
  return new RegExp(`^${re}$`, CASE_INSENSITIVE ? 'iu' : 'u');
}
