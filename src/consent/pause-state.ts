/**
 * The "pause all calls" switch. It lives in the consent database rather than in memory so that
 * `aios-device pause` works from another process while the agent runs: the agent checks it on every
 * call, from a cache emptied when another process writes the database.
 */
import type { Db } from './db.js';
import { dataVersion, statement } from '../storage/sqlite.js';

/** Whether calls are paused, since when and by whom. */
export interface PauseInfo {
  paused: boolean;
  since: string | null;
  by: string | null;
}

/** Reads and flips the paused flag. */
export class PauseState {
  private cached: PauseInfo | undefined;
  private version = -1;

  constructor(private readonly db: Db, private readonly now: () => Date = () => new Date()) {}

  /** Current state: cached, and re-read when another process (the CLI) changed the database. */
  get(): PauseInfo {
    const v = dataVersion(this.db);
    if (this.cached && v === this.version) return this.cached;
    this.version = v;
    this.cached = this.read();
    return this.cached;
  }

  private read(): PauseInfo {
    const row = statement(this.db, `SELECT value FROM settings WHERE key = 'paused'`).get() as { value: string } | undefined;
    if (!row) return { paused: false, since: null, by: null };
    const v = JSON.parse(row.value) as PauseInfo;
    return { paused: v.paused === true, since: v.since ?? null, by: v.by ?? null };
  }

  /** Sets the flag; `by` says who (cli, ui, tray), for status and the docs' "who paused me" question. */
  set(paused: boolean, by: string): PauseInfo {
    const info: PauseInfo = paused ? { paused, since: this.now().toISOString(), by } : { paused, since: null, by: null };
    this.db
      .prepare(`INSERT INTO settings (key, value) VALUES ('paused', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`)
      .run(JSON.stringify(info));
    this.cached = info;
    return info;
  }
}
