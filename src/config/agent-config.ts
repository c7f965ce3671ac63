/**
 * The agent's config file (PROTOCOL.md §11): schema, defaults and loading.
 */
import { Type, type Static } from '@sinclair/typebox';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { checkConfig, readConfigFile, resolvePath, ConfigError, LogSection, type ConfigProblem } from './load.js';
import { coreMessage } from '../i18n/index.js';
import { PermissionLevel } from '../protocol/messages.js';

const S = Type.String({ minLength: 1 });
const strict = { additionalProperties: false } as const;
const Decision = Type.Union([Type.Literal('allow'), Type.Literal('ask'), Type.Literal('deny')]);

/** Schema of the agent config; unknown keys are errors. */
export const AgentConfigSchema = Type.Object(
  {
    bridge: Type.Optional(Type.Object({ url: Type.Optional(S), urls: Type.Optional(Type.Array(S, { minItems: 1, maxItems: 16 })), token_file: Type.Optional(S), token: Type.Optional(S) }, strict)),
    identity: Type.Optional(
      Type.Object({ workspace_id: Type.Optional(S), user_id: Type.Optional(S), device_id: Type.Optional(S), device_name: Type.Optional(S) }, strict),
    ),
    data_dir: Type.Optional(S),
    local_endpoint: Type.Optional(
      Type.Object({ host: Type.Optional(S), port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })), socket: Type.Optional(Type.Union([S, Type.Literal(false)])), enabled: Type.Optional(Type.Boolean()) }, strict),
    ),
    // Each `grants.<kind>` is checked against the schema of the handler that declares the kind
    // (GrantStore.setConfig, once the handlers are imported): here only its outline.
    grants: Type.Optional(Type.Record(Type.String({ pattern: '^[a-z][a-z0-9_]*$' }), Type.Array(Type.Unknown()))),
    policy: Type.Optional(Type.Record(Type.String({ pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)+$' }), Decision)),
    confirmations: Type.Optional(
      Type.Object({ provider: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('ui'), Type.Literal('tty'), Type.Literal('none')])), timeout_ms: Type.Optional(Type.Integer({ minimum: 1000 })) }, strict),
    ),
    functions: Type.Optional(Type.Object({ disabled: Type.Optional(Type.Array(S)) }, strict)),
    adapters: Type.Optional(Type.Object({ dirs: Type.Optional(Type.Array(S)), developer_mode: Type.Optional(Type.Boolean()), builtin: Type.Optional(Type.Array(S)), unsandboxed: Type.Optional(Type.Union([Type.Literal('allow'), Type.Literal('refuse')])), approved: Type.Optional(Type.Record(S, Type.Object({ levels: Type.Optional(Type.Record(S, PermissionLevel)) }, strict))) }, strict)),
    trust: Type.Optional(Type.Object({ keys: Type.Optional(Type.Array(S)) }, strict)),
    limits: Type.Optional(
      Type.Object(
        {
          max_concurrent_calls: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024 })),
          dedupe_retention_s: Type.Optional(Type.Integer({ minimum: 60 })),
          max_message_bytes: Type.Optional(Type.Integer({ minimum: 65536, maximum: 16 * 1024 * 1024 })),
        },
        strict,
      ),
    ),
    journal: Type.Optional(Type.Object({ synchronous: Type.Optional(Type.Union([Type.Literal('normal'), Type.Literal('full')])) }, strict)),
    log: Type.Optional(LogSection),
    handlers: Type.Optional(Type.Record(S, Type.Object({}, { additionalProperties: true }))),
  },
  strict,
);

/** The config as written. */
export type AgentConfigFile = Static<typeof AgentConfigSchema>;

/** The config with defaults applied and paths resolved. */
export interface AgentConfig extends AgentConfigFile {
  data_dir: string;
  limits: { max_concurrent_calls: number; dedupe_retention_s: number; max_message_bytes: number };
  confirmations: { provider: 'auto' | 'ui' | 'tty' | 'none'; timeout_ms: number };
  /** The file it came from (for messages), or '(inline)'. */
  source: string;
}

/** Default data directory per platform. */
export function defaultDataDir(): string {
  if (process.platform === 'win32') return join(process.env['LOCALAPPDATA'] ?? homedir(), 'AIOS Device');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'AIOS Device');
  return join(process.env['XDG_DATA_HOME'] ?? join(homedir(), '.local', 'share'), 'aios-device');
}

/** A bridge address the device session can dial: ws(s) or http(s). */
function isBridgeUrl(url: string): boolean {
  try {
    return ['ws:', 'wss:', 'http:', 'https:'].includes(new URL(url).protocol);
  } catch {
    return false;
  }
}

/** The bridge addresses the device session tries, in order (`bridge.urls`, else `bridge.url`). */
export function bridgeUrls(config: Pick<AgentConfigFile, 'bridge'>): string[] {
  return config.bridge?.urls ? [...config.bridge.urls] : config.bridge?.url ? [config.bridge.url] : [];
}

/** Validates a parsed document and applies defaults. */
export function normalizeAgentConfig(doc: unknown, source = '(inline)'): AgentConfig {
  const c = checkConfig<AgentConfigFile>(source, doc, AgentConfigSchema);
  const rel = (p: string) => (source === '(inline)' ? p : resolvePath(source, p));
  const problems: ConfigProblem[] = [];
  // Whether a `policy` entry names a critical function is known only once the functions are registered:
  // `adminPolicyProblems` (src/consent/policy.ts) refuses `allow` for those at start-up.
  if (c.bridge?.token && c.bridge?.token_file) problems.push(coreMessage('core.config.token_exclusive'));
  if (c.bridge?.url && c.bridge?.urls) problems.push(coreMessage('core.config.url_exclusive'));
  for (const url of c.bridge?.urls ?? (c.bridge?.url ? [c.bridge.url] : [])) {
    if (!isBridgeUrl(url)) problems.push(coreMessage('core.config.bridge_url', { url }));
  }
  if (problems.length) throw new ConfigError(source, problems);
  const out: AgentConfig = {
    ...c,
    source,
    data_dir: c.data_dir ? rel(c.data_dir) : defaultDataDir(),
    limits: {
      max_concurrent_calls: c.limits?.max_concurrent_calls ?? 8,
      dedupe_retention_s: c.limits?.dedupe_retention_s ?? 86_400,
      max_message_bytes: c.limits?.max_message_bytes ?? 1024 * 1024,
    },
    confirmations: { provider: c.confirmations?.provider ?? 'auto', timeout_ms: c.confirmations?.timeout_ms ?? 60_000 },
  };
  if (c.bridge?.token_file) out.bridge = { ...c.bridge, token_file: rel(c.bridge.token_file) };
  // `bridge.url` stays the first address (sign-in, blobs, status); the session tries them all in order.
  if (c.bridge?.urls) out.bridge = { ...out.bridge, url: c.bridge.urls[0]!, urls: c.bridge.urls };
  if (c.adapters?.dirs) out.adapters = { ...c.adapters, dirs: c.adapters.dirs.map(rel) };
  if (c.trust?.keys) out.trust = { keys: c.trust.keys.map(rel) };
  if (c.log?.file) out.log = { ...c.log, file: rel(c.log.file) };
  // A socket path is a path like the others: relative to the config's folder, not to where the agent was started.
  if (typeof c.local_endpoint?.socket === 'string') out.local_endpoint = { ...c.local_endpoint, socket: rel(c.local_endpoint.socket) };
  return out;
}

/** How paths inside `grants` entries are resolved: relative to the config file's folder. */
export function configPathResolver(config: Pick<AgentConfig, 'source'>): (p: string) => string {
  return (p) => (config.source === '(inline)' ? p : resolvePath(config.source, p));
}

/** Loads and checks an agent config file. */
export function loadAgentConfig(file: string): AgentConfig {
  return normalizeAgentConfig(readConfigFile(file), file);
}
