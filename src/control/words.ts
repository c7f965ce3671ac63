/**
 * The words a person reads about a function, a risk and an error, as catalogue messages (key + params),
 * for every surface to render in its own language: the command line and the tty prompt with the agent's
 * catalogue (src/i18n), the window with the catalogue the agent serves it (control.catalogue.get).
 * The wire keeps its English `message`s and descriptors; these are for people only.
 *
 * A plain module (no Node APIs): the window's page bundles it too.
 */

/** A catalogue message: a key and its parameters (nested messages render in the same language). */
export interface WordsMessage {
  readonly key: string;
  readonly params?: Readonly<Record<string, string | number | WordsMessage>>;
}

/**
 * The catalogue keys of a built-in function's title and one-line description: in its handler's catalogue
 * (handlers/<handler>/i18n), `<handler>.function.<function id>.title` and `….description`. The handler
 * name is part of the key because a handler's functions need not start with its name (media's
 * `camera.list`).
 */
export function functionKeys(handler: string, functionId: string): { title: string; description: string } {
  const base = `${handler}.function.${functionId}`;
  return { title: `${base}.title`, description: `${base}.description` };
}

/** The permission levels of PROTOCOL.md §4, lowest first (`core.level.<level>` names each). */
export const LEVELS = ['public', 'low', 'medium', 'high', 'critical'] as const;

/** A descriptor's risk flags (PROTOCOL.md §4). */
export interface RiskFlags {
  readonly destructive?: boolean;
  readonly physical?: boolean;
  readonly read_only?: boolean;
  readonly idempotent?: boolean;
}

/**
 * "permission level: high · can delete or overwrite data, doing it twice may have twice the effect": the
 * level in words and what the risk flags mean. A level the catalogue does not know is shown as it came.
 * `has` says whether a key exists (so an unknown level stays readable).
 */
export function riskMessage(v: { permission_level: string; risk?: RiskFlags | null }, has: (key: string) => boolean): WordsMessage {
  const levelKey = `core.level.${v.permission_level}`;
  const level: string | WordsMessage = has(levelKey) ? { key: levelKey } : v.permission_level;
  const flags: string[] = [];
  const r = v.risk;
  if (r) {
    if (r.destructive) flags.push('destructive');
    if (r.physical) flags.push('physical');
    if (r.read_only) flags.push('read_only');
    if (!r.read_only && r.idempotent === false) flags.push('not_idempotent');
  }
  if (!flags.length) return { key: 'core.level.line', params: { level } };
  // The flags as one parameter: a list joined by the language's separator (core.risk.separator).
  const list = flags.reduceRight<WordsMessage | undefined>(
    (rest, f) => (rest ? { key: 'core.risk.list', params: { first: { key: `core.risk.flag.${f}` }, rest } } : { key: `core.risk.flag.${f}` }),
    undefined,
  )!;
  return { key: 'core.level.line_flags', params: { level, flags: list } };
}

/** An error as the wire carries it (a call outcome's `error`, an HTTP error body, a protocol error's data). */
export interface ErrorLike {
  readonly type: string;
  readonly message?: string;
  readonly details?: unknown;
}

/**
 * What an error means for a person, with its parameters (the path, the limit, the versions) from its
 * `details`: `core.error.<type>` or a variant that names them; `core.error.other` for a type the
 * catalogue does not know. `has` says whether a key exists.
 */
export function errorMessage(e: ErrorLike, has: (key: string) => boolean): WordsMessage {
  const d = (e.details && typeof e.details === 'object' ? e.details : {}) as Record<string, unknown>;
  const str = (k: string): string | undefined => (typeof d[k] === 'string' && d[k] ? (d[k] as string) : typeof d[k] === 'number' ? String(d[k]) : undefined);
  const key = `core.error.${e.type}`;
  if (!has(key)) return { key: 'core.error.other', params: { type: e.type } };
  switch (e.type) {
    case 'permission_denied': {
      const path = str('path');
      return path ? { key: `${key}.path`, params: { path } } : { key };
    }
    case 'payload_too_large': {
      const limit = str('limit');
      return limit ? { key: `${key}.limit`, params: { limit } } : { key };
    }
    case 'client_outdated': {
      const min = str('min_client_version');
      const version = str('client_version');
      if (min && version) return { key: `${key}.min`, params: { min_version: min, version } };
      return min ? { key: `${key}.min_only`, params: { min_version: min } } : { key };
    }
    case 'unsupported_protocol_version': {
      const s = d['supported'];
      const supported = Array.isArray(s) ? s.filter((x) => typeof x === 'string').join(', ') : str('supported');
      return supported ? { key: `${key}.supported`, params: { supported } } : { key };
    }
    case 'rate_limited': {
      const ms = Number(d['retry_after_ms']);
      return Number.isFinite(ms) && ms > 0 ? { key: `${key}.retry`, params: { seconds: Math.ceil(ms / 1000) } } : { key };
    }
    default:
      return { key };
  }
}
