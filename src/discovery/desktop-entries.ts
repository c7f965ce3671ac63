/**
 * Installed software from freedesktop `.desktop` files (PROTOCOL.md §7.3): used to match
 * `requirements.software.detection` and as the lowest-priority inferred adapter entries.
 */
import { constants } from 'node:fs';
import { access, readdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';

/** One application entry. */
export interface DesktopEntry {
  /** File name, e.g. `google-chrome.desktop` (the desktop file id). */
  file: string;
  path: string;
  name: string;
  comment?: string;
  exec?: string;
  tryExec?: string;
  hidden: boolean;
}

/** Default `.desktop` folders: system, then the user's (Linux and other XDG desktops only). */
export function defaultDesktopDirs(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string[] {
  if (platform === 'win32' || platform === 'darwin') return [];
  const dataHome = env['XDG_DATA_HOME'] || join(homedir(), '.local', 'share');
  return ['/usr/share/applications', join(dataHome, 'applications')];
}

/** Parses the `[Desktop Entry]` group of a `.desktop` file; undefined when it is not an application. */
export function parseDesktopEntry(text: string, file: string, path: string): DesktopEntry | undefined {
  const fields = new Map<string, string>();
  let inMain = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    if (line.startsWith('[')) {
      inMain = line === '[Desktop Entry]';
      continue;
    }
    if (!inMain) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    if (!fields.has(key)) fields.set(key, line.slice(eq + 1).trim());
  }
  if ((fields.get('Type') ?? 'Application') !== 'Application' || !fields.get('Name')) return undefined;
  const e: DesktopEntry = {
    file,
    path,
    name: fields.get('Name') as string,
    hidden: fields.get('Hidden') === 'true' || fields.get('NoDisplay') === 'true',
  };
  const comment = fields.get('Comment');
  if (comment) e.comment = comment;
  const exec = fields.get('Exec');
  if (exec) e.exec = exec;
  const tryExec = fields.get('TryExec');
  if (tryExec) e.tryExec = tryExec;
  return e;
}

/** Reads every `*.desktop` in the folders; a later folder's file overrides an earlier one of the same id. */
export async function scanDesktopEntries(dirs: readonly string[]): Promise<Map<string, DesktopEntry>> {
  const out = new Map<string, DesktopEntry>();
  for (const dir of dirs) {
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const n of names.filter((x) => x.endsWith('.desktop')).sort()) {
      const path = join(dir, n);
      const text = await readFile(path, 'utf8').catch(() => undefined);
      const entry = text === undefined ? undefined : parseDesktopEntry(text, n, path);
      if (entry) out.set(n, entry);
    }
  }
  return out;
}

/** True when `name` is an executable file: an absolute path, or a bare name found on PATH. */
export async function executableExists(name: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const candidates = isAbsolute(name) ? [name] : name.includes('/') ? [] : (env['PATH'] ?? '').split(delimiter).filter(Boolean).map((d) => join(d, name));
  for (const c of candidates) {
    try {
      await access(c, constants.X_OK);
      return true;
    } catch {
      /* try the next one */
    }
  }
  return false;
}

/** True when a process whose executable name is `exe`'s base name runs (Linux /proc; false elsewhere). */
export async function processRunning(exe: string): Promise<boolean> {
  if (process.platform !== 'linux') return false;
  const base = exe.split('/').pop()?.slice(0, 15) ?? '';
  if (!base) return false;
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((p) => /^\d+$/.test(p));
  for (const pid of pids) {
    const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === base) return true;
  }
  return false;
}
