/**
 * Limits of the files handler (read from `handlers.files` options) and the name rules that go with them:
 * denied extensions for writes, hidden and system names, names that mean something else on some OS.
 */
import { fail } from '../../src/sdk/index.js';

/** The configured limits, with safe defaults filled in. */
export interface FileLimits {
  /** Largest file (or range) a read may return, inline or as a blob. */
  readonly maxReadBytes: number;
  /** Largest text `files.read_text` returns in one call. */
  readonly maxTextBytes: number;
  /** Largest file a write may produce (text, inline bytes or blob). */
  readonly maxWriteBytes: number;
  /** Binary data up to this size travels inline as base64; larger goes through a blob (PROTOCOL.md §9). */
  readonly inlineMaxBytes: number;
  /** Lower-case extensions (without dot) that writes, copies, moves and mkdir refuse to create. */
  readonly deniedWriteExtensions: ReadonlySet<string>;
  /** Hidden and system names are reachable only when true (or when the granted folder itself is hidden). */
  readonly allowHidden: boolean;
  /** Files with more than one hard link are refused unless true (see docs/handlers/files.md). */
  readonly allowHardlinks: boolean;
  /** Deletes go to the OS trash when true and a trash exists; otherwise they are permanent. */
  readonly useTrash: boolean;
  /** Upper bound on entries a search, recursive copy or recursive delete walks. */
  readonly maxWalkEntries: number;
}

/** Executables, scripts and shortcuts: things a double click may run. */
export const DEFAULT_DENIED_WRITE_EXTENSIONS: readonly string[] = [
  'exe', 'com', 'bat', 'cmd', 'msi', 'msp', 'msc', 'scr', 'pif', 'cpl', 'dll', 'sys', 'drv', 'ocx',
  'ps1', 'psm1', 'psd1', 'ps1xml', 'vbs', 'vbe', 'js', 'jse', 'mjs', 'cjs', 'wsf', 'wsh', 'wsc', 'hta', 'reg', 'inf', 'scf',
  'lnk', 'url', 'website', 'desktop', 'webloc', 'inetloc', 'fileloc', 'appref-ms', 'library-ms', 'search-ms', 'settingcontent-ms',
  'sh', 'bash', 'zsh', 'csh', 'ksh', 'fish', 'command', 'tool', 'run', 'elf',
  'app', 'pkg', 'mpkg', 'dmg', 'workflow', 'scpt', 'applescript', 'action', 'terminal',
  'appimage', 'deb', 'rpm', 'snap', 'flatpak', 'apk', 'jar', 'class', 'so', 'dylib', 'ko',
  'py', 'pyw', 'pyc', 'pl', 'rb', 'php', 'lua', 'tcl', 'awk',
];

const KIB = 1024;
const MIB = 1024 * KIB;
const GIB = 1024 * MIB;

/** Default limits. */
export const DEFAULT_LIMITS: FileLimits = {
  maxReadBytes: 1 * GIB,
  maxTextBytes: 512 * KIB,
  maxWriteBytes: 1 * GIB,
  inlineMaxBytes: 256 * KIB,
  deniedWriteExtensions: new Set(DEFAULT_DENIED_WRITE_EXTENSIONS),
  allowHidden: false,
  allowHardlinks: false,
  useTrash: true,
  maxWalkEntries: 100_000,
};

function num(options: Record<string, unknown>, key: string, dflt: number, max: number): number {
  const v = options[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) {
    throw new Error(`handlers.files.${key} must be an integer between 0 and ${max}`);
  }
  return v;
}

function bool(options: Record<string, unknown>, key: string, dflt: boolean): boolean {
  const v = options[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new Error(`handlers.files.${key} must be true or false`);
  return v;
}

const KNOWN_OPTIONS = new Set([
  'max_read_bytes', 'max_text_bytes', 'max_write_bytes', 'inline_max_bytes', 'denied_write_extensions',
  'allow_hidden', 'allow_hardlinks', 'use_trash', 'max_walk_entries',
]);

/** Parses `handlers.files` options; unknown keys and bad values are configuration errors. */
export function parseLimits(options: Record<string, unknown>): FileLimits {
  for (const k of Object.keys(options)) {
    if (!KNOWN_OPTIONS.has(k)) throw new Error(`unknown option handlers.files.${k}`);
  }
  let denied = DEFAULT_LIMITS.deniedWriteExtensions;
  const d = options['denied_write_extensions'];
  if (d !== undefined) {
    if (!Array.isArray(d) || !d.every((x) => typeof x === 'string')) {
      throw new Error('handlers.files.denied_write_extensions must be a list of extensions');
    }
    denied = new Set(d.map((x: string) => foldName(x.replace(/^\./, ''))));
  }
  const inline = num(options, 'inline_max_bytes', DEFAULT_LIMITS.inlineMaxBytes, 256 * KIB);
  return {
    maxReadBytes: num(options, 'max_read_bytes', DEFAULT_LIMITS.maxReadBytes, Number.MAX_SAFE_INTEGER),
    maxTextBytes: num(options, 'max_text_bytes', DEFAULT_LIMITS.maxTextBytes, 768 * KIB),
    maxWriteBytes: num(options, 'max_write_bytes', DEFAULT_LIMITS.maxWriteBytes, Number.MAX_SAFE_INTEGER),
    inlineMaxBytes: inline,
    deniedWriteExtensions: denied,
    allowHidden: bool(options, 'allow_hidden', DEFAULT_LIMITS.allowHidden),
    allowHardlinks: bool(options, 'allow_hardlinks', DEFAULT_LIMITS.allowHardlinks),
    useTrash: bool(options, 'use_trash', DEFAULT_LIMITS.useTrash),
    maxWalkEntries: num(options, 'max_walk_entries', DEFAULT_LIMITS.maxWalkEntries, 10_000_000),
  };
}

/**
 * Folds a name the way the most forgiving file systems compare names (NFKC, lower case, trailing dots
 * and spaces dropped as Windows does), so that `EVIL.EXE.`, `evil.Exe` and `evil．exe` all look alike.
 */
export function foldName(name: string): string {
  return name.normalize('NFKC').toLowerCase().replace(/[. ]+$/u, '');
}

/** Names that Windows and macOS keep for themselves even without a leading dot. */
const SYSTEM_NAMES = new Set(['desktop.ini', 'thumbs.db', 'ehthumbs.db', '$recycle.bin', 'system volume information', 'icon\r']);

/** True for dot-files and OS system names. */
export function isHiddenName(name: string): boolean {
  const f = foldName(name);
  return f.startsWith('.') || name.startsWith('.') || SYSTEM_NAMES.has(f) || f.startsWith('$');
}

/** The extension a file system or shell would act on, folded; '' when none. */
export function extensionOf(name: string): string {
  const f = foldName(name);
  const i = f.lastIndexOf('.');
  return i <= 0 ? '' : f.slice(i + 1);
}

/** True when `name` may not be written (its extension is on the denied list). */
export function isDeniedName(name: string, limits: FileLimits): boolean {
  const ext = extensionOf(name);
  return ext !== '' && limits.deniedWriteExtensions.has(ext);
}

export function checkWritableName(name: string, limits: FileLimits): void {
  if (isDeniedName(name, limits)) {
    const ext = extensionOf(name);
    fail('permission_denied', `Writing files of type .${ext} is not allowed.`, { details: { reason: 'denied_extension', extension: ext } });
  }
}
