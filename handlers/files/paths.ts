/**
 * Grant resolution and path safety: turns `{ root, path }` into a real path inside a granted folder, or
 * refuses with `permission_denied` and a reason. Lexical checks run first (no file-system access for an
 * obviously hostile path); then `realpath` (of the parent, for new files) must stay inside the root's own
 * real path. Comparisons are exact (byte for byte), so case or normalisation differences can only make a
 * path look outside, never inside.
 */
import fs from 'node:fs';
import path from 'node:path';
import { WireError, fail } from '../../src/sdk/index.js';
import { type FileLimits, isHiddenName } from './limits.js';
import { type Root, isPseudoFsPath } from './roots.js';

/** A path argument: a root name and a path relative to it, or an absolute path inside a root. */
export interface PathArg {
  root?: string | undefined;
  path: string;
}

/** What the resolver needs from the handler. */
export interface PathContext {
  readonly roots: readonly Root[];
  readonly limits: FileLimits;
}

/** A path that passed every check. */
export interface Resolved {
  readonly root: Root;
  /** The root's real path at resolution time. */
  readonly rootReal: string;
  /** Path relative to the root, `/`-separated, '' for the root itself (for messages and outputs). */
  readonly rel: string;
  /** The real absolute path of the target (for a new file: real parent + name). */
  readonly real: string;
  readonly parentReal: string;
  readonly name: string;
  /** lstat of `real` when it exists (never a symlink: links were resolved). */
  readonly stat: fs.Stats | undefined;
}

const WIN = process.platform === 'win32';
const MAX_PATH_CHARS = 4096;
/** C0/C1 controls (\p{Cc}), bidi overrides and isolates, zero-width characters and BOM: invisible or misleading in names. */
const INVISIBLE = /[\p{Cc}\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/u;
const RESERVED_DEVICE = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$|clock\$)$/i;

/** Throws `permission_denied` with a machine-readable reason. */
export function deny(reason: string, message: string): never {
  fail('permission_denied', message, { details: { reason } });
}

/** True when `p` is `base` or lies under it (exact comparison). */
export function isInside(p: string, base: string): boolean {
  if (p === base) return true;
  const b = base.endsWith(path.sep) ? base : base + path.sep;
  return p.startsWith(b);
}

/**
 * Lexical checks on the raw argument, before the file system is touched. Returns the relative segments
 * (absolute paths are reduced to their part under `root` later).
 */
export function checkLexical(raw: string): void {
  if (typeof raw !== 'string') deny('not_a_string', 'The path must be a string.');
  if (raw.includes('\0')) deny('nul_byte', 'The path contains a NUL byte.');
  if (raw.length > MAX_PATH_CHARS) deny('too_long', 'The path is too long.');
  if (INVISIBLE.test(raw)) deny('control_character', 'The path contains control or invisible characters.');
  if (/^[\\/]{2}[.?][\\/]/.test(raw)) deny('device_namespace', 'Windows device and raw-namespace paths (\\\\.\\, \\\\?\\) are not allowed.');
  if (/^[\\/]{2}/.test(raw)) deny('unc_path', 'Network (UNC) paths are not allowed.');
  if (!WIN && raw.includes('\\')) {
    if (/^[A-Za-z]:/.test(raw)) deny('drive_path', 'Windows drive paths are not valid on this device.');
    deny('backslash', 'Backslashes are not allowed in paths on this device; use /.');
  }
  if (!WIN && /^[A-Za-z]:/.test(raw)) deny('drive_path', 'Windows drive paths are not valid on this device.');
  const body = WIN ? raw.replace(/^[A-Za-z]:/, '') : raw;
  if (body.includes(':')) deny('alternate_data_stream', 'Colons are not allowed in paths (alternate data streams).');
  for (const seg of body.split(WIN ? /[\\/]/ : '/')) {
    if (seg === '..') deny('parent_segment', 'The path may not contain "..".');
    if (seg === '' || seg === '.') continue;
    if (seg.toLowerCase() === '..namedfork') deny('named_fork', 'Resource-fork paths are not allowed.');
    if (/[. ]$/.test(seg)) deny('trailing_dot_or_space', 'Names may not end with a dot or a space.');
    if (RESERVED_DEVICE.test(seg.replace(/\..*$/, '').trimEnd())) deny('reserved_device_name', 'Windows device names (CON, NUL, COM1, …) are not allowed.');
  }
}

/**
 * The shared folder an argument names, without touching the disk (for locks and consent, which must be
 * synchronous): by `root`, else the longest folder that lexically holds the absolute path (a nested
 * grant wins over its parent). Unlike `locate` it does not try the folders' real paths: an absolute
 * path given through a link to a shared folder gets the resource `*` and no folder lock.
 */
export function rootOf(roots: readonly Root[], arg: PathArg): Root | undefined {
  if (arg.root !== undefined) return roots.find((r) => r.name === arg.root);
  return longestHolder(roots, path.resolve(arg.path));
}

/** The longest of `roots` whose folder lexically holds `abs` (a nested grant wins over its parent). */
function longestHolder(roots: readonly Root[], abs: string): Root | undefined {
  let best: Root | undefined;
  for (const r of roots) if (isInside(abs, r.path) && (!best || r.path.length > best.path.length)) best = r;
  return best;
}

function findRoot(ctx: PathContext, name: string): Root {
  const r = ctx.roots.find((x) => x.name === name);
  if (!r) deny('unknown_root', 'No shared folder has that name.');
  return r;
}

async function realRoot(root: Root): Promise<string> {
  let real: string;
  try {
    real = await fs.promises.realpath(root.path);
  } catch {
    fail('device_unavailable', 'The shared folder is not available right now.', { details: { root: root.name } });
  }
  if (isPseudoFsPath(real)) deny('device_path', 'The shared folder resolves to a device or kernel folder.');
  return real;
}

/** Splits the argument into (root, relative segments). */
async function locate(ctx: PathContext, arg: PathArg): Promise<{ root: Root; rootReal: string; segs: string[] }> {
  checkLexical(arg.path);
  const isAbs = WIN ? path.win32.isAbsolute(arg.path) : arg.path.startsWith('/');
  if (!isAbs) {
    if (arg.root === undefined) deny('unknown_root', 'A relative path needs the name of a shared folder ("root").');
    const root = findRoot(ctx, arg.root);
    return { root, rootReal: await realRoot(root), segs: splitRel(arg.path) };
  }
  const abs = path.resolve(arg.path);
  const candidates = arg.root !== undefined ? [findRoot(ctx, arg.root)] : ctx.roots;
  // As `rootOf` sees it first; then through the folders' real paths (a path given through a link).
  const lexical = longestHolder(candidates, abs);
  if (lexical) return { root: lexical, rootReal: await realRoot(lexical), segs: splitRel(path.relative(lexical.path, abs)) };
  let best: { root: Root; rootReal: string } | undefined;
  for (const root of candidates) {
    let rr: string;
    try {
      rr = await fs.promises.realpath(root.path);
    } catch {
      continue;
    }
    if (isInside(abs, rr) && (!best || root.path.length > best.root.path.length)) best = { root, rootReal: rr };
  }
  if (!best) deny('outside_root', 'The path is outside every shared folder.');
  return { root: best.root, rootReal: best.rootReal, segs: splitRel(path.relative(best.rootReal, abs)) };
}

function splitRel(p: string): string[] {
  return p.split(WIN ? /[\\/]/ : '/').filter((s) => s !== '' && s !== '.');
}

function checkHidden(ctx: PathContext, segs: readonly string[]): void {
  if (ctx.limits.allowHidden) return;
  if (segs.some(isHiddenName)) deny('hidden', 'Hidden and system files are not shared.');
}

/** A refusal met while resolving a path; what is not about the path itself goes to `fromOsError`. */
function osError(e: unknown): never {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ELOOP') deny('symlink_loop', 'The path runs into a symbolic link loop.');
  if (code === 'ENOENT' || code === 'ENOTDIR') fail('execution_failed', 'The file or folder does not exist.', { details: { reason: 'not_found' } });
  if (code === 'ENAMETOOLONG') deny('too_long', 'The path is too long.');
  throw fromOsError(e);
}

/**
 * What the operating system refused, said as a wire error (every function, every step: opening,
 * creating, renaming, deleting; the handler's functions are wrapped in it). Anything else goes on as it
 * is; the host turns a stray error into a generic `execution_failed` without private detail. A file
 * that vanishes during the work is `not_found` and retryable; a path that does not exist when it is
 * resolved is refused by `osError` below, not retryable.
 */
export function fromOsError(e: unknown): unknown {
  if (e instanceof WireError) return e;
  switch ((e as NodeJS.ErrnoException | undefined)?.code) {
    case 'EACCES':
    case 'EPERM':
      return new WireError('permission_denied', 'The operating system refused access to the file or folder.', { details: { reason: 'os_denied' } });
    case 'EROFS':
      return new WireError('permission_denied', 'The file system is read-only.', { details: { reason: 'read_only_fs' } });
    case 'ENOSPC':
    case 'EDQUOT':
      return new WireError('execution_failed', 'The disk is full.', { details: { reason: 'no_space' } });
    case 'ENOENT':
    case 'ENOTDIR':
      return new WireError('execution_failed', 'The file or folder does not exist (it may have just been moved or deleted).', { details: { reason: 'not_found' }, retryable: true });
    case 'EBUSY':
    case 'ETXTBSY':
    case 'EMFILE':
    case 'ENFILE':
      return new WireError('execution_failed', 'The file or folder is busy; try again.', { details: { reason: 'busy' }, retryable: true });
    default:
      return e;
  }
}


/** Checks a real path found by resolution: inside the root, not a device, not hidden, not special. */
function checkReal(ctx: PathContext, rootReal: string, real: string, st: fs.Stats | undefined): void {
  if (!isInside(real, rootReal)) deny('symlink_outside', 'The path leads outside the shared folder through a link.');
  if (isPseudoFsPath(real)) deny('device_path', 'Device and kernel paths are not allowed.');
  checkHidden(ctx, splitRel(path.relative(rootReal, real)));
  if (st && !st.isFile() && !st.isDirectory()) deny('special_file', 'Only regular files and folders can be used.');
}

/**
 * Resolves a path argument.
 * - `need: 'write'` refuses read-only roots.
 * - `mustExist: false` resolves the parent and allows the final name not to exist yet; an existing
 *   final link is followed and must stay inside, a dangling one is refused.
 */
export async function resolvePath(
  ctx: PathContext,
  arg: PathArg,
  opts: { need: 'read' | 'write'; mustExist: boolean },
): Promise<Resolved> {
  const { root, rootReal, segs } = await locate(ctx, arg);
  if (opts.need === 'write' && root.access !== 'read_write') deny('read_only_grant', 'This folder is shared read-only.');
  checkHidden(ctx, segs);
  const rel = segs.join('/');
  const target = path.join(rootReal, ...segs);
  if (opts.mustExist || segs.length === 0) {
    let real: string;
    let st: fs.Stats;
    try {
      real = await fs.promises.realpath(target);
      st = await fs.promises.lstat(real);
    } catch (e) {
      osError(e);
    }
    checkReal(ctx, rootReal, real, st);
    return { root, rootReal, rel, real, parentReal: path.dirname(real), name: path.basename(real), stat: st };
  }
  const name = segs[segs.length - 1]!;
  let parentReal: string;
  try {
    parentReal = await fs.promises.realpath(path.dirname(target));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') fail('execution_failed', 'The parent folder does not exist.', { details: { reason: 'parent_not_found' } });
    osError(e);
  }
  checkReal(ctx, rootReal, parentReal, undefined);
  let real = path.join(parentReal, name);
  let st: fs.Stats | undefined;
  try {
    st = await fs.promises.lstat(real);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') osError(e);
  }
  if (st?.isSymbolicLink()) {
    try {
      real = await fs.promises.realpath(real);
      st = await fs.promises.lstat(real);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') deny('dangling_symlink', 'The name is a link to something that does not exist.');
      osError(e);
    }
  }
  if (!isInside(path.dirname(real), rootReal) && real !== rootReal) deny('symlink_outside', 'The path leads outside the shared folder through a link.');
  checkReal(ctx, rootReal, real, st);
  return { root, rootReal, rel, real, parentReal: path.dirname(real), name: path.basename(real), stat: st };
}

/** Fails with the documented error for a folder where a file is needed (`details.reason: is_folder`). */
export function isFolder(): never {
  fail('execution_failed', 'The path is a folder, not a file.', { details: { reason: 'is_folder' } });
}

/** Fails with the documented error for a file where a folder is needed (`details.reason: not_folder`). */
export function notFolder(): never {
  fail('execution_failed', 'The path is a file, not a folder.', { details: { reason: 'not_folder' } });
}

/** Fails unless the resolved target is an existing regular file. */
export function requireFile(r: Resolved): fs.Stats {
  if (!r.stat) fail('execution_failed', 'The file does not exist.', { details: { reason: 'not_found' } });
  if (r.stat.isDirectory()) isFolder();
  return r.stat;
}

/** Fails unless the resolved target is an existing folder. */
export function requireDir(r: Resolved): fs.Stats {
  if (!r.stat) fail('execution_failed', 'The folder does not exist.', { details: { reason: 'not_found' } });
  if (!r.stat.isDirectory()) notFolder();
  return r.stat;
}

/** Refuses a regular file with other hard links unless allowed (a link may be a door to a file elsewhere). */
export function checkHardlinks(ctx: PathContext, st: fs.Stats): void {
  if (st.isFile() && st.nlink > 1 && !ctx.limits.allowHardlinks) {
    deny('hardlink', 'The file has other hard links, so it may also live outside the shared folder.');
  }
}

/** Display form "a/b.txt in Documents". */
export function where(r: Pick<Resolved, 'rel' | 'root'>): string {
  return r.rel === '' ? `the shared folder ${r.root.name}` : `${r.rel} in ${r.root.name}`;
}

/**
 * For `mkdir -p`: checks the argument lexically, picks the root, checks access and hidden names, and
 * returns the segments to walk (each one is then opened and verified on its own).
 */
export async function locateForCreate(ctx: PathContext, arg: PathArg): Promise<{ root: Root; rootReal: string; segs: string[] }> {
  const loc = await locate(ctx, arg);
  if (loc.root.access !== 'read_write') deny('read_only_grant', 'This folder is shared read-only.');
  checkHidden(ctx, loc.segs);
  return loc;
}

/**
 * The shared folder a call may use, checked without touching the target (for `resources()`, before
 * consent): lexical checks, which folder, its access, hidden names. Throws `permission_denied` with the
 * reason; `run()` still resolves the path fully.
 */
export async function grantedRoot(ctx: PathContext, arg: PathArg, need: 'read' | 'write'): Promise<Root> {
  const loc = await locate(ctx, arg);
  if (need === 'write' && loc.root.access !== 'read_write') deny('read_only_grant', 'This folder is shared read-only.');
  checkHidden(ctx, loc.segs);
  return loc.root;
}

/** Checks a real path reached during a walk (see `checkReal`). */
export function checkWalked(ctx: PathContext, rootReal: string, real: string, st: fs.Stats | undefined): void {
  checkReal(ctx, rootReal, real, st);
}

/**
 * The path as far as it exists, for `resources()` (before consent), so that every escape that can be
 * known before running is refused there (`rejected/permission_denied`), not found by `run()`: a link
 * out of the shared folder (in the target, its parent, or any existing folder above a missing part), a
 * link loop, a device or special file, a hidden name. Returns the resolution when the parent exists
 * (`stat` set when the target does), undefined when it does not (`run()` says so, or creates it).
 * `run()` still resolves again: what changes after this check is refused there (`foundWhileRunning`).
 */
export async function resolveAhead(ctx: PathContext, arg: PathArg, need: 'read' | 'write'): Promise<Resolved | undefined> {
  try {
    return await resolvePath(ctx, arg, { need, mustExist: false });
  } catch (e) {
    if (e instanceof WireError && e.type === 'permission_denied') throw e;
    if (!(e instanceof WireError) || e.type !== 'execution_failed') return undefined;
  }
  // Something on the way does not exist: the deepest part that does must still be inside the folder.
  const { rootReal, segs } = await locate(ctx, arg);
  for (let n = segs.length - 1; n > 0; n--) {
    let real: string;
    try {
      real = await fs.promises.realpath(path.join(rootReal, ...segs.slice(0, n)));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') continue;
      if (code === 'ELOOP') deny('symlink_loop', 'The path runs into a symbolic link loop.');
      return undefined;
    }
    checkReal(ctx, rootReal, real, undefined);
    return undefined;
  }
  return undefined;
}

/** Path refusals that `resources()` finds when the disk already shows them (see `resolveAhead`). */
const ESCAPES = new Set(['symlink_outside', 'symlink_loop', 'dangling_symlink', 'device_path', 'special_file', 'hidden', 'hardlink', 'changed_during_open']);

/**
 * An escape that `run()` meets although `resources()` passed: the path changed between the check and the
 * run (a link swapped during the call). Still refused, as `failed/permission_denied` (found while
 * running: the handler had started), with `details.found: "while_running"` and a message that says so.
 */
export function foundWhileRunning(e: unknown): unknown {
  if (!(e instanceof WireError) || e.type !== 'permission_denied') return e;
  const reason = e.details?.['reason'];
  if (typeof reason !== 'string' || !ESCAPES.has(reason)) return e;
  const message = reason === 'symlink_outside'
    ? 'A link in the path changed during the call and now leads outside the shared folder.'
    : reason === 'changed_during_open' ? e.message : `The path changed during the call: ${e.message.charAt(0).toLowerCase()}${e.message.slice(1)}`;
  return new WireError('permission_denied', message, { details: { ...e.details, found: 'while_running' }, retryable: e.retryable });
}
