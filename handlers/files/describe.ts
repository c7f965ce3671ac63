/**
 * Pieces of the one-sentence confirmation prompts: sizes, entry counts, places. The sentences are keys
 * of this handler's catalogue (i18n/en.json, i18n/zh-CN.json); these helpers build their parameters.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Message } from '../../src/sdk/index.js';

/** A prompt sentence: a key of this handler's catalogue and its parameters. */
export function msg(key: string, params: Message['params'] = {}): Message {
  return { key, params };
}

/** "14 KB", "1.2 MB" (decimal units, as file managers show them, the same in every language); "12 bytes". */
export function sizeMsg(bytes: number): Message | string {
  if (bytes === 1) return msg('files.size.one_byte');
  if (bytes < 1000) return msg('files.size.bytes', { n: bytes });
  return formatSize(bytes);
}

/** "14 KB", "1.2 MB": decimal units; below 1000, "N bytes" (English; sizeMsg is the catalogue form). */
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
export function countMsg(n: number, cap: number): Message {
  if (n > cap) return msg('files.count.more_than', { n: cap });
  return n === 1 ? msg('files.count.one') : msg('files.count.many', { n });
}

/** "report.docx in Documents", or "the shared folder Documents" for the root itself. */
export function whereMsg(r: { rel: string; root: { name: string } }): Message {
  return r.rel === '' ? msg('files.where.root', { root: r.root.name }) : msg('files.where.path', { path: r.rel, root: r.root.name });
}

/** "folder Invoices/ in Documents". */
export function folderMsg(r: { rel: string; root: { name: string } }): Message {
  return msg('files.where.folder', { path: r.rel, root: r.root.name });
}

/** What the caller asked for, when it could not be resolved: "a/b.txt in Documents" or the path alone. */
export function askedMsg(a: { root?: string | undefined; path: string }): Message | string {
  return a.root ? msg('files.where.path', { path: a.path, root: a.root }) : a.path;
}
