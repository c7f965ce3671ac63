/**
 * Watches adapter and `.desktop` directories (fs.watch: inotify on Linux, FSEvents on macOS,
 * ReadDirectoryChangesW on Windows) and reports changes coalesced over 300 ms. A directory that does not
 * exist yet is watched through its nearest existing parent, so creating it later is noticed too.
 */
import { watch, type FSWatcher } from 'node:fs';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Coalescing window of PROTOCOL.md §4 (tools_changed). */
export const COALESCE_MS = 300;

/** Calls `onChange` once per burst of file-system events under the watched directories. */
export class AdapterWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;

  /**
   * @param roots adapters directories (their sub-folders are watched too) and `.desktop` directories
   * @param deep which of `roots` also get their immediate sub-folders watched (adapter folders)
   */
  constructor(
    private readonly roots: readonly string[],
    private readonly deep: ReadonlySet<string>,
    private readonly onChange: () => void,
    private readonly coalesceMs = COALESCE_MS,
  ) {}

  /** Starts watching. */
  start(): void {
    this.stopped = false;
    this.resync();
  }

  /** Stops every watch and any pending notification. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  /** Brings the set of watched paths in line with what exists now (call after each scan). */
  resync(): void {
    if (this.stopped) return;
    const want = new Set<string>();
    for (const root of this.roots) {
      if (existsSync(root)) {
        want.add(root);
        if (this.deep.has(root)) {
          for (const ent of safeReaddir(root)) if (ent.isDirectory() && !ent.name.startsWith('.')) want.add(join(root, ent.name));
        }
      } else {
        let p = dirname(root);
        while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
        want.add(p);
      }
    }
    for (const [p, w] of this.watchers) {
      if (!want.has(p)) {
        w.close();
        this.watchers.delete(p);
      }
    }
    for (const p of want) if (!this.watchers.has(p)) this.add(p);
  }

  private add(p: string): void {
    try {
      const w = watch(p, { persistent: false }, () => this.poke());
      w.on('error', () => {
        w.close();
        this.watchers.delete(p);
        this.poke();
      });
      this.watchers.set(p, w);
    } catch {
      /* vanished between the check and the watch; the next resync retries */
    }
  }

  private poke(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.onChange();
    }, this.coalesceMs);
  }
}

function safeReaddir(p: string) {
  try {
    return readdirSync(p, { withFileTypes: true });
  } catch {
    return [];
  }
}
