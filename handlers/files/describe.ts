/** Pieces of the one-sentence confirmation prompts: sizes and entry counts. */
import fs from 'node:fs';
import path from 'node:path';

/** "14 KB", "1.2 MB": decimal units, as file managers show them. */
export function formatSize(bytes: number): string {
  if (bytes < 1000) return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = bytes;
  let u = -1;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${v >= 10 ? Math.round(v) : Math.round(v * 10) / 10} ${units[u]}`;
}

/**
 * Counts the entries below a folder without following links, up to `cap` (then returns `cap + 1`
 * meaning "more than cap"). Used for prompts and to bound recursive operations.
 */
export async function countEntries(dir: string, cap: number, signal?: AbortSignal): Promise<number> {
  let n = 0;
  const stack = [dir];
  while (stack.length > 0) {
    signal?.throwIfAborted();
    const d = stack.pop()!;
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      n++;
      if (n > cap) return n;
      if (e.isDirectory()) stack.push(path.join(d, e.name));
    }
  }
  return n;
}

/** "132 entries", "more than 100000 entries". */
export function formatCount(n: number, cap: number): string {
  if (n > cap) return `more than ${cap} entries`;
  return `${n} ${n === 1 ? 'entry' : 'entries'}`;
}
