/**
 * The reference bridge's config file (PROTOCOL.md §11).
 */
import { Type, type Static } from '@sinclair/typebox';
import { ConfigError, LogSection, checkConfig, readConfigFile, resolvePath, type ConfigProblem } from './load.js';
import { coreMessage } from '../i18n/index.js';
import { SaidError, saidOf } from '../i18n/said.js';
import { isPasswordHash } from '../base/password.js';
import slugify from 'slugify';

/** Default retention of ended calls' records (`call_retention_s`): 30 days. */
export const CALL_RETENTION_S = 30 * 24 * 3600;
/** The shortest retention accepted: one day (a runtime's retry window, `dedupe_retention_s`, and §6.8's resolution window). */
export const MIN_CALL_RETENTION_S = 24 * 3600;
import { readFileSync } from 'node:fs';

const S = Type.String({ minLength: 1 });
/** A cluster node's id: it names LISTEN channels, identifiers that cannot be bound parameters and fold case. */
export const NODE_ID_PATTERN = '^[a-z0-9_]{1,32}$';
/** The environment variable that gives the PostgreSQL store's URL (a URL carries a password: not in the file). */
export const STORE_URL_ENV = 'AIOS_BRIDGE_STORE_URL';
const strict = { additionalProperties: false } as const;

/** Schema of the bridge config; unknown keys are errors. */
export const BridgeConfigSchema = Type.Object(
  {
    listen: Type.Optional(Type.Object({ host: Type.Optional(S), port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })) }, strict)),
    data_dir: S,
    public_url: Type.Optional(S),
    min_client_version: Type.Optional(Type.String({ pattern: '^\\d+\\.\\d+\\.\\d+' })),
    runtime_tokens: Type.Optional(
      Type.Record(S, Type.Object({ workspace_id: S, id: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._:-]{1,128}$' })), name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) }, strict)),
    ),
    device_tokens: Type.Optional(Type.Record(S, Type.Object({ workspace_id: S, user_id: S, device_id: S }, strict))),
    heartbeat_ms: Type.Optional(Type.Integer({ minimum: 100 })),
    runtime_rate_limit: Type.Optional(Type.Object({ per_second: Type.Number({ exclusiveMinimum: 0 }), burst: Type.Integer({ minimum: 1 }) }, strict)),
    runtime_stream_limit: Type.Optional(Type.Integer({ minimum: 1 })),
    max_message_bytes: Type.Optional(Type.Integer({ minimum: 65536 })),
    lease_ms: Type.Optional(Type.Integer({ minimum: 0 })),
    call_retention_s: Type.Optional(Type.Integer({ minimum: MIN_CALL_RETENTION_S })),
    blobs: Type.Optional(
      Type.Object(
        {
          /** The blobs' folder (default `<data_dir>/blobs`); on a cluster, a folder every node mounts. */
          dir: Type.Optional(S),
          max_bytes: Type.Optional(Type.Integer({ minimum: 1 })),
          ttl_s: Type.Optional(Type.Integer({ minimum: 1 })),
          workspace_quota_bytes: Type.Optional(Type.Integer({ minimum: 1 })),
        },
        strict,
      ),
    ),
    users: Type.Optional(
      Type.Array(Type.Object({ id: S, name: Type.Optional(S), password_hash: S, workspaces: Type.Array(S) }, strict)),
    ),
    access_token_ttl_s: Type.Optional(Type.Integer({ minimum: 30 })),
    device_code_ttl_s: Type.Optional(Type.Integer({ minimum: 0 })),
    device_poll_interval_s: Type.Optional(Type.Integer({ minimum: 0 })),
    refresh_token_ttl_s: Type.Optional(Type.Integer({ minimum: 60 })),
    device_limits: Type.Optional(
      Type.Object(
        {
          max_functions: Type.Optional(Type.Integer({ minimum: 1 })),
          max_descriptor_bytes: Type.Optional(Type.Integer({ minimum: 1024 })),
          max_list_bytes: Type.Optional(Type.Integer({ minimum: 1024 })),
          tools_changed_per_s: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
        },
        strict,
      ),
    ),
    log: Type.Optional(LogSection),
    /** Where calls, devices and refused hellos are kept (issue 34): SQLite in `data_dir` (default) or PostgreSQL. */
    store: Type.Optional(
      Type.Object(
        {
          kind: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]),
          url: Type.Optional(S),
          url_file: Type.Optional(S),
        },
        strict,
      ),
    ),
    /** This node in a cluster of bridges on one PostgreSQL (required with `store.kind: postgres`). */
    cluster: Type.Optional(Type.Object({ node_id: Type.String({ pattern: NODE_ID_PATTERN }) }, strict)),
    mcp: Type.Optional(
      Type.Object(
        {
          session_ttl_s: Type.Optional(Type.Integer({ minimum: 1 })),
          allowed_origins: Type.Optional(Type.Array(S)),
          resume_ttl_s: Type.Optional(Type.Integer({ minimum: 1 })),
          resume_max_bytes: Type.Optional(Type.Integer({ minimum: 1024 })),
          heartbeat_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
        },
        strict,
      ),
    ),
  },
  strict,
);

export type BridgeConfigFile = Static<typeof BridgeConfigSchema>;

/** Bridge config with defaults applied. */
export interface BridgeConfig extends BridgeConfigFile {
  listen: { host: string; port: number };
  min_client_version: string;
  runtime_tokens: Record<string, RuntimeTokenEntry>;
  device_tokens: Record<string, { workspace_id: string; user_id: string; device_id: string }>;
  heartbeat_ms: number;
  lease_ms: number;
  /** How long an ended call's record is kept after its last change (src/bridge/retention.ts). */
  call_retention_s: number;
  runtime_rate_limit: { per_second: number; burst: number };
  /** What one runtime token holds open at once: SSE `events` streams, `wait: true` requests (and MCP sessions). */
  runtime_stream_limit: number;
  max_message_bytes: number;
  device_limits: DeviceLimits;
  store: StoreConfig;
  source: string;
}

/**
 * The store section with defaults applied. With `postgres`, the URL comes from `url`, else the file
 * `url_file` names (resolved against the config's folder), else the environment's `AIOS_BRIDGE_STORE_URL`;
 * {@link storeUrl} reads it when the bridge starts.
 */
export type StoreConfig = { kind: 'sqlite' } | { kind: 'postgres'; url?: string; url_file?: string };

/** What one device may send the bridge (issue 27): past any of them its session is closed (4008). */
export interface DeviceLimits {
  /** Functions in the device's whole list. */
  max_functions: number;
  /** JSON bytes of one descriptor. */
  max_descriptor_bytes: number;
  /** JSON bytes of the whole list, every page together. */
  max_list_bytes: number;
  /** `tools_changed` notifications per second, on average: a burst of ten seconds' worth, then this rate. */
  tools_changed_per_s: number;
}

/** The defaults of `device_limits`. */
export const DEFAULT_DEVICE_LIMITS: DeviceLimits = { max_functions: 512, max_descriptor_bytes: 65_536, max_list_bytes: 4 * 1024 * 1024, tools_changed_per_s: 1 };

/**
 * A runtime token's entry with its attested identity resolved (PROTOCOL.md §6.1, 1.2): `id` is the
 * configured one, else the slug of `name`, else `runtime-<n>` by the entry's position (1-based);
 * `name` is the configured one, else the id. Never derived from the token itself.
 */
export interface RuntimeTokenEntry {
  workspace_id: string;
  id: string;
  name: string;
  /** True when the entry had neither `id` nor `name` (the bridge warns at start). */
  unnamed?: true;
}

/** The slug of a runtime's name, as its default id: lower-case ASCII letters, digits and dashes. */
export function runtimeSlug(name: string): string {
  return slugify(name, { lower: true, strict: true, trim: true }).slice(0, 128);
}

/** Resolves every runtime token's attested `{ id, name }` (see RuntimeTokenEntry). */
export function resolveRuntimeTokens(entries: Record<string, { workspace_id: string; id?: string; name?: string }>): Record<string, RuntimeTokenEntry> {
  const out: Record<string, RuntimeTokenEntry> = {};
  Object.entries(entries).forEach(([token, e], i) => {
    const slug = e.name !== undefined ? runtimeSlug(e.name) : '';
    const id = e.id ?? (slug || `runtime-${i + 1}`);
    out[token] = { workspace_id: e.workspace_id, id, name: e.name ?? id, ...(e.id === undefined && e.name === undefined ? { unnamed: true as const } : {}) };
  });
  return out;
}

/** Validates and applies defaults. */
export function normalizeBridgeConfig(doc: unknown, source = '(inline)'): BridgeConfig {
  const c = checkConfig<BridgeConfigFile>(source, doc, BridgeConfigSchema);
  const badHashes = (c.users ?? []).flatMap((u, i) =>
    isPasswordHash(u.password_hash) ? [] : [coreMessage('core.config.bad_hash', { index: i, user: u.id })],
  );
  if (badHashes.length) throw new ConfigError(source, badHashes);
  const store = storeConfig(c, source);
  return {
    ...c,
    store,
    source,
    data_dir: source === '(inline)' ? c.data_dir : resolvePath(source, c.data_dir),
    listen: { host: c.listen?.host ?? '127.0.0.1', port: c.listen?.port ?? 8700 },
    min_client_version: c.min_client_version ?? '0.0.0',
    runtime_tokens: resolveRuntimeTokens(c.runtime_tokens ?? {}),
    device_tokens: c.device_tokens ?? {},
    heartbeat_ms: c.heartbeat_ms ?? 20_000,
    lease_ms: c.lease_ms ?? 300_000,
    call_retention_s: c.call_retention_s ?? CALL_RETENTION_S,
    runtime_rate_limit: c.runtime_rate_limit ?? { per_second: 200, burst: 400 },
    runtime_stream_limit: c.runtime_stream_limit ?? 64,
    max_message_bytes: c.max_message_bytes ?? 1024 * 1024,
    device_limits: { ...DEFAULT_DEVICE_LIMITS, ...c.device_limits },
    // Like data_dir: relative to the config's folder, not to where the bridge was started.
    ...(c.blobs?.dir && source !== '(inline)' ? { blobs: { ...c.blobs, dir: resolvePath(source, c.blobs.dir) } } : {}),
    ...(c.log?.file && source !== '(inline)' ? { log: { ...c.log, file: resolvePath(source, c.log.file) } } : {}),
  };
}

/** True for a URL the `pg` driver connects with. */
function isPostgresUrl(u: string): boolean {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(u).protocol);
  } catch {
    return false;
  }
}

/** Checks `store` and `cluster` together; the problems name the key and say what to write. */
function storeConfig(c: BridgeConfigFile, source: string): StoreConfig {
  const s = c.store ?? { kind: 'sqlite' as const };
  const problems: ConfigProblem[] = [];
  if (s.kind === 'sqlite') {
    if (s.url !== undefined || s.url_file !== undefined) problems.push(coreMessage('core.config.store_url_sqlite'));
    if (c.cluster) problems.push(coreMessage('core.config.cluster_needs_postgres'));
    if (problems.length) throw new ConfigError(source, problems);
    return { kind: 'sqlite' };
  }
  if (!c.cluster) problems.push(coreMessage('core.config.postgres_needs_node_id'));
  if (s.url !== undefined && s.url_file !== undefined) problems.push(coreMessage('core.config.store_url_both'));
  const file = s.url_file !== undefined ? (source === '(inline)' ? s.url_file : resolvePath(source, s.url_file)) : undefined;
  const out: StoreConfig = { kind: 'postgres', ...(s.url !== undefined ? { url: s.url } : {}), ...(file !== undefined ? { url_file: file } : {}) };
  if (!problems.length) {
    try {
      storeUrl(out);
    } catch (e) {
      problems.push(saidOf(e) ?? (e as Error).message);
    }
  }
  if (problems.length) throw new ConfigError(source, problems);
  return out;
}

/**
 * The PostgreSQL store's URL (`store.url`, else the contents of `store.url_file`, else the environment's
 * `AIOS_BRIDGE_STORE_URL`); throws a sentence that names where it looked. Never logged: it carries a password.
 */
export function storeUrl(s: Extract<StoreConfig, { kind: 'postgres' }>, env: NodeJS.ProcessEnv = process.env): string {
  let url: string;
  let from: string;
  if (s.url !== undefined) {
    url = s.url;
    from = '"store.url"';
  } else if (s.url_file !== undefined) {
    from = `"store.url_file" (${s.url_file})`;
    try {
      url = readFileSync(s.url_file, 'utf8').trim();
    } catch (e) {
      throw new SaidError(coreMessage('core.config.store_url_file_unreadable', { file: s.url_file, code: (e as NodeJS.ErrnoException).code ?? 'error' }), { cause: e });
    }
  } else {
    url = env[STORE_URL_ENV]?.trim() ?? '';
    from = STORE_URL_ENV;
    if (!url) throw new SaidError(coreMessage('core.config.store_url_missing', { env: STORE_URL_ENV }));
  }
  if (!isPostgresUrl(url)) throw new SaidError(coreMessage('core.config.store_url_scheme', { from }));
  return url;
}

/** Loads and checks a bridge config file. */
export function loadBridgeConfig(file: string): BridgeConfig {
  return normalizeBridgeConfig(readConfigFile(file), file);
}
