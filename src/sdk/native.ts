/**
 * Optional native modules (Bluetooth, cameras, …): imported lazily on first use, cached once loaded, and
 * every way they fail to load turned into the typed error a runtime and a person can act on.
 */
import { WireError } from '../protocol/errors.js';
import { coreMessage, strings, type CoreKey } from '../i18n/index.js';

/** Why an optional native module could not be used (`details.reason` of the error). */
export type NativeFailureReason = 'not_installed' | 'no_adapter' | 'os_refused' | 'unsupported_platform' | 'load_failed';

/** Options of optionalNative. */
export interface OptionalNativeOptions {
  /** What the module gives the user, as they would name it ("Bluetooth", "the camera"): used in messages. */
  feature: string;
  /** Platforms the module works on (default: any). */
  platforms?: readonly NodeJS.Platform[];
  /**
   * Module-specific failures the generic rules do not know (e.g. an error text meaning "no adapter").
   * Return a reason to use it, or undefined for the generic rules.
   */
  classify?(error: unknown): NativeFailureReason | undefined;
}

const NO_ADAPTER_CODES = new Set(['EAFNOSUPPORT', 'ENODEV', 'ENXIO', 'EADDRNOTAVAIL', 'EPROTONOSUPPORT', 'ESOCKTNOSUPPORT']);
const REFUSED_CODES = new Set(['EACCES', 'EPERM']);
const MESSAGE_KEYS: Record<NativeFailureReason, CoreKey> = {
  not_installed: 'core.native.not_installed',
  no_adapter: 'core.native.no_adapter',
  os_refused: 'core.native.permission_denied',
  unsupported_platform: 'core.native.unsupported_platform',
  load_failed: 'core.native.load_failed',
};

function codeOf(e: unknown): string {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : e instanceof Error ? e.name : 'unknown';
}

/** The generic reason for an import failure of `name`. */
export function classifyNativeError(name: string, e: unknown): NativeFailureReason {
  const code = codeOf(e);
  const message = e instanceof Error ? e.message : String(e);
  if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
    // A missing package of its own means a broken install of the module, not "not installed".
    return message.includes(`'${name}'`) || message.includes(`"${name}"`) ? 'not_installed' : 'load_failed';
  }
  if (REFUSED_CODES.has(code)) return 'os_refused';
  if (NO_ADAPTER_CODES.has(code)) return 'no_adapter';
  return 'load_failed';
}

/** The WireError for a failure: `permission_denied` when the OS refused, else `device_unavailable`. */
export function nativeFailure(name: string, reason: NativeFailureReason, opts: OptionalNativeOptions, code: string): WireError {
  const message = strings.render(coreMessage(MESSAGE_KEYS[reason], { feature: opts.feature, module: name, code }), 'en');
  const details = { reason, module: name, feature: opts.feature, code };
  return reason === 'os_refused'
    ? new WireError('permission_denied', message, { details, sideEffects: 'none' })
    : new WireError('device_unavailable', message, { details, sideEffects: 'none' });
}

const loaded = new Map<string, Promise<unknown>>();

/**
 * Imports an optional native module on first use and caches it once loaded (a failure is not cached:
 * the next call tries again, e.g. after the user installed the module; note that Node itself may keep
 * an ES module that threw while loading). Throws `device_unavailable` (details.reason `not_installed`,
 * `no_adapter`, `unsupported_platform`, `load_failed`) or `permission_denied` (reason `os_refused`), with
 * a message saying what to do.
 *
 * Typed without casts by passing the import: `optionalNative('node-notifier', { feature: 'Desktop
 * notifications', load: () => import('node-notifier') })` resolves to exactly what that import() gives.
 * Without `load`, `import(name)` is used and the caller names the type: `optionalNative<T>(name, …)`.
 */
export function optionalNative<M>(name: string, opts: OptionalNativeOptions & { load: () => Promise<M> }): Promise<M>;
export function optionalNative<T = unknown>(name: string, opts: OptionalNativeOptions): Promise<T>;
export async function optionalNative(name: string, opts: OptionalNativeOptions & { load?: () => Promise<unknown> }): Promise<unknown> {
  if (opts.platforms && !opts.platforms.includes(process.platform)) throw nativeFailure(name, 'unsupported_platform', opts, process.platform);
  let p = loaded.get(name);
  if (!p) {
    p = opts.load ? opts.load() : import(name);
    loaded.set(name, p);
    p.catch(() => loaded.delete(name));
  }
  try {
    return await p;
  } catch (e) {
    const reason = opts.classify?.(e) ?? classifyNativeError(name, e);
    throw nativeFailure(name, reason, opts, codeOf(e));
  }
}
