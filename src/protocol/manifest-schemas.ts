/**
 * Schemas the project owns for adapter manifests: the Adapter Card (`adapter.json`, PROTOCOL.md §7.1, the
 * AIOS discovery spec §2.2) and `tool.aios.yaml` (§7.3). One TypeBox source gives JSON Schema and types.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Access, Confirmation, FUNCTION_ID_PATTERN, PermissionLevel, Risk } from './messages.js';
import { schemaValidator, type SchemaViolation } from './schema-validator.js';

/**
 * Adapter id: reverse-domain for third parties (`org.example.hello`); built-in handlers use their folder
 * name (`files`), so a single segment is accepted too.
 */
export const ADAPTER_ID_PATTERN = '^[a-z0-9][a-z0-9_-]*(\\.[a-z0-9][a-z0-9_-]*)*$';
/** `sha256-` + base64url digest, used for code-file bindings. */
export const SHA256_TAG_PATTERN = '^sha256-[A-Za-z0-9_-]{43}$';
/** Extension URN a card lists when it binds code files (`code`). */
export const CODE_BINDING_EXTENSION = 'urn:aios:ext:code-binding:1.0';

const Str = (o: object = {}) => Type.String(o);
const Opt = Type.Optional;
const Schema = Type.Object({}, { additionalProperties: true });

/** `adapter` block of a card. */
export const AdapterInfo = Type.Object(
  {
    id: Str({ pattern: ADAPTER_ID_PATTERN, maxLength: 128 }),
    name: Str({ minLength: 1 }),
    description: Opt(Str()),
    version: Str({ minLength: 1 }),
    protocol_version: Str({ pattern: '^\\d+\\.\\d+(\\.\\d+)?$' }),
    author: Opt(Str()),
    homepage: Opt(Str()),
    license: Opt(Str()),
  },
  { additionalProperties: true },
);
export type AdapterInfo = Static<typeof AdapterInfo>;

/** `capabilities` block of a card. */
export const AdapterCapabilities = Type.Object(
  {
    streaming: Opt(Type.Boolean()),
    batch_operations: Opt(Type.Boolean()),
    async_tasks: Opt(Type.Boolean()),
    push_notifications: Opt(Type.Boolean()),
    state_transition_history: Opt(Type.Boolean()),
  },
  { additionalProperties: Type.Boolean() },
);
export type AdapterCapabilities = Static<typeof AdapterCapabilities>;

/**
 * A skill: the AIOS card fields (id, name, permission_level required) plus, optionally, every §4 descriptor
 * field; missing ones get pessimistic defaults when the skill becomes a function.
 */
/** The descriptor fields a skill (card) and a capability (tool.aios.yaml) share. */
const skillFields = {
  id: Str({ pattern: FUNCTION_ID_PATTERN, maxLength: 128 }),
  name: Str({ minLength: 1 }),
  description: Opt(Str()),
  examples: Opt(Type.Array(Str())),
  input_schema: Opt(Schema),
  output_schema: Opt(Schema),
  version: Opt(Str()),
  capability_type: Opt(Str({ pattern: '^[a-z][a-z0-9_]*$' })),
  access: Opt(Access),
  risk: Opt(Risk),
  confirmation: Opt(Confirmation),
  timeout_ms_default: Opt(Type.Integer({ minimum: 1 })),
  timeout_ms_max: Opt(Type.Integer({ minimum: 1 })),
  cancellable: Opt(Type.Boolean()),
  locks: Opt(Type.Array(Str())),
};

export const CardSkill = Type.Object(
  {
    ...skillFields,
    permission_level: PermissionLevel,
    descriptor_hash: Opt(Str()),
  },
  { additionalProperties: true },
);
export type CardSkill = Static<typeof CardSkill>;

/** `requirements.software` of a card. */
export const SoftwareRequirement = Type.Object(
  {
    name: Str(),
    min_version: Opt(Str()),
    detection: Opt(
      Type.Object(
        {
          desktop_file: Opt(Type.Union([Str({ pattern: '^[^/\\\\]+\\.desktop$' }), Type.Null()])),
          executable: Opt(Type.Union([Str({ minLength: 1 }), Type.Null()])),
          dbus_service: Opt(Type.Union([Str(), Type.Null()])),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
);

/** `code`: the files a card binds, each with its SHA-256, and the module to load. */
export const CodeBinding = Type.Object(
  {
    entry: Str({ minLength: 1 }),
    files: Type.Record(Str(), Str({ pattern: SHA256_TAG_PATTERN })),
  },
  { additionalProperties: false },
);
export type CodeBinding = Static<typeof CodeBinding>;

/**
 * `mcp`: the adapter is an MCP server run as a child process (stdio). `command` is a path inside the signed
 * folder, or an absolute system path whose SHA-256 (lowercase hex) `command_sha256` records; `args` are
 * passed as written (a relative path names a file of the folder: the process runs in its verified copy);
 * `env` adds fixed variables; its tools become the functions `<prefix>.<tool>`; `network: true` keeps the
 * host network in the sandbox.
 */
export const McpSpec = Type.Object(
  {
    command: Str({ minLength: 1 }),
    command_sha256: Opt(Str({ pattern: '^[0-9a-f]{64}$' })),
    args: Opt(Type.Array(Str())),
    env: Opt(Type.Record(Str({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Str())),
    prefix: Str({ pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$', maxLength: 64 }),
    network: Opt(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type McpSpec = Static<typeof McpSpec>;

/** `signature` of a card (§7.1). */
export const CardSignature = Type.Object(
  {
    algorithm: Type.Union([Type.Literal('ES256'), Type.Literal('RS256'), Type.Literal('EdDSA')]),
    key_id: Str({ minLength: 1 }),
    value: Str({ pattern: '^[A-Za-z0-9_-]+\\.\\.[A-Za-z0-9_-]+$' }),
  },
  { additionalProperties: false },
);
export type CardSignature = Static<typeof CardSignature>;

/** An Adapter Card (`adapter.json`, `/.well-known/aios-adapter.json`). */
export const AdapterCardSchema = Type.Object(
  {
    adapter: AdapterInfo,
    capabilities: AdapterCapabilities,
    skills: Type.Array(CardSkill),
    authentication: Opt(Type.Object({ required: Type.Boolean(), schemes: Type.Array(Str()) }, { additionalProperties: true })),
    endpoints: Opt(
      Type.Object(
        { rpc: Opt(Str()), http: Opt(Str()), health: Opt(Str()), metrics: Opt(Str()) },
        { additionalProperties: true },
      ),
    ),
    requirements: Opt(
      Type.Object(
        {
          software: Opt(SoftwareRequirement),
          dependencies: Opt(Type.Array(Type.Object({ name: Str(), version: Opt(Str()) }, { additionalProperties: true }))),
        },
        { additionalProperties: true },
      ),
    ),
    extensions: Opt(Type.Array(Str())),
    code: Opt(CodeBinding),
    /** An MCP server adapter: its skills come from the server's `tools/list` (`skills` is then empty). */
    mcp: Opt(McpSpec),
    signature: Opt(CardSignature),
  },
  { additionalProperties: true },
);
export type AdapterCard = Static<typeof AdapterCardSchema>;

/** One `capabilities[]` entry of `tool.aios.yaml` (becomes a skill). */
export const ToolCapability = Type.Object(
  {
    ...skillFields,
    /** Shorthand for a `permissions[]` entry of this capability. */
    permission: Opt(PermissionLevel),
  },
  { additionalProperties: false },
);

/**
 * `tool.aios.yaml` (§7.3): `tool`, then either `capabilities[]` (+ `permissions[]`, `entry`: a JavaScript
 * adapter) or `mcp` (an MCP server, whose tools are its capabilities), and optional requirements.
 */
export const ToolYamlSchema = Type.Object(
  {
    tool: Type.Object(
      {
        id: Str({ pattern: ADAPTER_ID_PATTERN, maxLength: 128 }),
        name: Str({ minLength: 1 }),
        version: Str({ minLength: 1 }),
        description: Opt(Str()),
        author: Opt(Str()),
        homepage: Opt(Str()),
        license: Opt(Str()),
        protocol_version: Opt(Str()),
      },
      { additionalProperties: false },
    ),
    capabilities: Opt(Type.Array(ToolCapability, { minItems: 1 })),
    mcp: Opt(McpSpec),
    /** `permissions[]` → `skills[].permission_level`: one level per capability id (or `permission` on it). */
    permissions: Opt(Type.Array(
      Type.Object({ capability: Str({ pattern: FUNCTION_ID_PATTERN }), level: PermissionLevel }, { additionalProperties: false }),
    )),
    entry: Opt(Str({ minLength: 1 })),
    adapter_capabilities: Opt(AdapterCapabilities),
    requirements: Opt(Type.Object({ software: Opt(SoftwareRequirement) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);
export type ToolYaml = Static<typeof ToolYamlSchema>;

/** Checks a card against its schema; [] when valid. */
export function validateCard(value: unknown): SchemaViolation[] {
  return schemaValidator.check(AdapterCardSchema, value);
}

/** Checks a parsed `tool.aios.yaml` against its schema; [] when valid. */
export function validateToolYaml(value: unknown): SchemaViolation[] {
  return schemaValidator.check(ToolYamlSchema, value);
}
