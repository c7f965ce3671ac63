/**
 * Start at login on Linux: an XDG autostart entry (`$XDG_CONFIG_HOME/autostart/aios-device.desktop`,
 * default `~/.config/autostart/`), which GNOME, KDE, Xfce and others run at login. Plain Node (no
 * electron import), so it is tested without the Electron binary; main.ts only passes the executable.
 * macOS and Windows use Electron's own login items (main.ts), not this.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The entry's file name. */
export const AUTOSTART_FILE = 'aios-device.desktop';
/** A key only our entries carry: a file of that name we did not write is never removed. */
const MARKER = 'X-AIOS-Device-Autostart=true';

/** Where autostart entries live for this user. */
export function autostartDir(env: NodeJS.ProcessEnv = process.env, home = homedir()): string {
  const xdg = env['XDG_CONFIG_HOME'];
  // The spec ignores a relative XDG_CONFIG_HOME.
  return join(xdg && xdg.startsWith('/') ? xdg : join(home, '.config'), 'autostart');
}

/**
 * One argument of `Exec=` as the Desktop Entry spec quotes it: bare when it has no reserved character,
 * else in double quotes with `"`, `` ` ``, `$` and `\` escaped; `%` is doubled (field codes). The
 * string-value escape (`\` → `\\`) is applied on top by `desktopEntry`, as the spec orders it.
 */
export function quoteExecArg(arg: string): string {
  if (/[\n\r]/.test(arg)) throw new Error('an Exec argument cannot contain a line break');
  const escapedPercent = arg.replace(/%/g, '%%');
  if (escapedPercent !== '' && !/[\s"'\\><~|&;$*?#()`]/.test(escapedPercent)) return escapedPercent;
  return `"${escapedPercent.replace(/(["`$\\])/g, '\\$1')}"`;
}

/** The entry's text: runs `exec` with `args` at login, hidden from menus. */
export function desktopEntry(o: { exec: string; args?: readonly string[]; name?: string }): string {
  const name = (o.name ?? 'AIOS Device').replace(/[\n\r]/g, ' ');
  return [
    '[Desktop Entry]',
    'Type=Application',
    `Name=${name}`,
    `Exec=${[o.exec, ...(o.args ?? [])].map(quoteExecArg).join(' ').replace(/\\/g, '\\\\')}`,
    'Terminal=false',
    'NoDisplay=true',
    'X-GNOME-Autostart-enabled=true',
    MARKER,
    '',
  ].join('\n');
}

/** The autostart entry of one user. */
export class LinuxAutostart {
  readonly file: string;

  constructor(o: { env?: NodeJS.ProcessEnv; home?: string } = {}) {
    this.file = join(autostartDir(o.env, o.home), AUTOSTART_FILE);
  }

  /** True when our entry is there and not switched off (`Hidden=true` or the GNOME key false). */
  isEnabled(): boolean {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch {
      return false;
    }
    return text.includes(MARKER) && !/^Hidden=true$/m.test(text) && !/^X-GNOME-Autostart-enabled=false$/m.test(text);
  }

  /** Writes the entry (replacing ours; 0644 as autostart entries are). */
  enable(o: { exec: string; args?: readonly string[]; name?: string }): void {
    mkdirSync(join(this.file, '..'), { recursive: true, mode: 0o700 });
    writeFileSync(this.file, desktopEntry(o), { mode: 0o644 });
  }

  /** Removes our entry; a file of that name without our marker is left alone (returns false). */
  disable(): boolean {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch {
      return true;
    }
    if (!text.includes(MARKER)) return false;
    rmSync(this.file, { force: true });
    return true;
  }
}
