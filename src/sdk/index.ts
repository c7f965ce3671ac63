/**
 * The public handler SDK: the only entry that handlers (built-in and third-party) import.
 * A handler is a folder under `handlers/` with a manifest (`tool.aios.yaml`) and a module whose default
 * export is a `Handler`.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { BlobRef, type Descriptor, type Requester } from '../protocol/messages.js';
import { WireError, type ErrorType, type SideEffects } from '../protocol/errors.js';
import type { CallResource, GrantKind, GrantsView, ResourceContext } from './grants.js';
import type { Message } from '../i18n/catalogue.js';
import type { CallTemp } from './temp.js';
import type { Logger } from '../base/logger.js';
import { withDescriptorDefaults, type DescriptorDraft } from './descriptor-defaults.js';

export * from './grants.js';
export { DESCRIPTOR_DEFAULTS, DEFAULT_TIMEOUT_MS, DEFAULT_TIMEOUT_MAX_MS, withDescriptorDefaults, type DecidedField, type DescriptorDraft } from './descriptor-defaults.js';
export { optionalNative, type OptionalNativeOptions, type NativeFailureReason } from './native.js';
export type { Message, MessageParams, Locale } from '../i18n/catalogue.js';
export type { CallTemp, Logger };

export { WireError };
export type { Descriptor, Requester, BlobRef, ErrorType, SideEffects };

/** The JSON Schema of a blob reference (PROTOCOL.md §9) for a function's input or output schema: the wire shape, closed. */
export const BlobRefSchema = Type.Object(BlobRef.properties, { additionalProperties: false });

/** A descriptor as a handler declares it; the host computes `descriptor_hash`. */
export type DescriptorInput = Omit<Descriptor, 'descriptor_hash'>;

/** Progress a handler reports; throttled by the host to 10/s per call. */
export interface Progress {
  progress?: number;
  total?: number;
  message?: string;
}

/** Moves large binary data through the bridge's blob store (PROTOCOL.md §9). */
export interface BlobClient {
  /** Streams a local file to the bridge and returns its reference; never holds it all in memory. */
  uploadFile(path: string, mediaType: string, signal?: AbortSignal): Promise<BlobRef>;
  /** Downloads a blob to a local file, checking size and SHA-256; removes the file on mismatch. */
  downloadToFile(ref: BlobRef, path: string, signal?: AbortSignal): Promise<void>;
}

/**
 * What a running call gets. `tempFile(ext?)` / `tempDir()` (CallTemp) make 0600 files / 0700 folders in a
 * private folder that is removed when the call ends, however it ends.
 */
export interface CallContext extends CallTemp {
  readonly callId: string;
  readonly functionId: string;
  /** Fires on timeout, cancel, lease expiry or shutdown. Handlers must stop promptly and release resources. */
  readonly signal: AbortSignal;
  readonly requester: Requester | undefined;
  readonly log: Logger;
  readonly blobs: BlobClient;
  /** The resources `resources()` resolved for this call (label = the grant's alias); empty without it. */
  readonly resources: readonly CallResource[];
  /** Report progress (throttled). */
  progress(p: Progress): void;
  /**
   * Declares the point of no return: after this, cancel answers `not_cancellable` and a lease expiry
   * lets the call finish.
   */
  commit(): void;
}

/** What a handler gets when it is created. */
export interface HandlerEnv {
  /** The grants as they are now (live: config plus what the user added or removed). */
  readonly grants: GrantsView;
  /** The handler's own section of the config, if any (`handlers.<name>`). */
  readonly options: Record<string, unknown>;
  readonly dataDir: string;
  readonly log: Logger;
  readonly appVersion: string;
  /** Registered function ids (for device.info). */
  listFunctions(): string[];
  /** What the agent offers built-in handlers besides calls; absent for third-party adapters. */
  readonly host?: HostServices;
}

/** A JSON-RPC method a built-in handler serves on the local endpoint's `/rpc` (local token required). */
export type LocalMethod = (params: unknown, conn: { notify?: (method: string, params: unknown) => void; onClose?: (cb: () => void) => void }) => Promise<unknown>;

/** Agent services for built-in handlers: local-endpoint methods, a status entry, desktop notices. */
export interface HostServices {
  /** Serves these methods on the local endpoint (`WS /rpc` gives them a back channel); names start with `<handler>.`. */
  addLocalMethods(methods: Record<string, LocalMethod>): void;
  /** Sets (undefined clears) this handler's entry in the agent status (`control.status` → `handlers.<name>`). */
  setStatus(status: Record<string, unknown> | undefined): void;
  /** Shows a desktop notice to the person at the machine (the agent's own notice mechanism); never throws. */
  notice(title: string, message: string): Promise<void>;
}

/** One function a handler provides. */
export interface FunctionDefinition<I = Record<string, unknown>, O = unknown> {
  readonly descriptor: DescriptorInput;
  /**
   * The resources these (validated) arguments touch, resolved BEFORE policy and confirmation (the first
   * half of PROTOCOL.md §6.1's policy step). Check here everything that can be checked without side
   * effects: throw `fail('permission_denied', …)` for a resource outside every grant and
   * `fail('invalid_arguments', …)` for a call that cannot succeed; the call then ends `rejected` with
   * `side_effects: none` and nobody is asked. Each resource is locked by `${kind}:${id}` unless it says
   * otherwise. Without it the call has no resource (remembered decisions cover the function) and locks
   * `descriptor.locks`.
   */
  resources?(args: I, ctx: ResourceContext): readonly CallResource[] | Promise<readonly CallResource[]>;
  /**
   * What will happen, for the confirmation prompt and the activity list, built from the validated
   * arguments and the resolved resources: a key of the handler's catalogue (handlers/<name>/i18n, keys
   * `<name>.…`) and its parameters, rendered in the user's language (e.g. `{ key: 'files.write.overwrite',
   * params: { name: 'report.docx', … } }` → "Overwrite report.docx in Documents (14 KB now, 15 KB after)").
   * A plain string is accepted from third-party adapters (no catalogue). May look at the file system.
   */
  describe?(args: I, resources: readonly CallResource[]): Description | Promise<Description>;
  /** Runs the call. Throw `WireError` for typed failures; anything else becomes `execution_failed`. */
  run(args: I, ctx: CallContext): Promise<O>;
}

/** A handler module's default export. */
export interface Handler {
  /** Folder name and manifest id. */
  readonly name: string;
  /** The grant kinds this handler owns (built-in handlers only; third-party adapters use existing kinds). */
  readonly grantKinds?: readonly GrantKind[];
  /** What people call it (tool.aios.yaml `tool.name`), e.g. "Shared files". */
  readonly title?: string;
  /** One sentence on what it offers (tool.aios.yaml `tool.description`). */
  readonly description?: string;
  /** The handler's version (tool.aios.yaml `tool.version`; default 1.0.0). */
  readonly version?: string;
  /** A note for readers of the manifest (written there as a comment), e.g. how it is switched on. */
  readonly about?: string;
  /**
   * Off unless the config says `handlers.<name>.enabled: true` (e.g. QA-only functions). Its functions are
   * the same either way, which keeps its manifest independent of the config.
   */
  readonly optIn?: boolean;
  /**
   * Builds the handler's functions, once, when the agent loads it. Return the functions, or an instance
   * with lifecycle hooks (pooled ports and connections are closed in `dispose` and `onPause`).
   */
  create(env: HandlerEnv): HandlerCreated | Promise<HandlerCreated>;
}

/** Any function definition, whatever its argument and output types (what a handler returns). */
// `never` arguments: a definition of any argument type is assignable here (parameters are contravariant).
export type AnyFunctionDefinition = FunctionDefinition<never, unknown>;

/** A created handler: its functions and optional lifecycle hooks. */
export interface HandlerInstance {
  readonly functions: readonly AnyFunctionDefinition[];
  /** The agent stops or unloads the handler: close ports, connections, timers. Awaited (bounded by the agent). */
  dispose?(): void | Promise<void>;
  /** The user paused all calls: release devices other programs may want. */
  onPause?(): void | Promise<void>;
  /** The user resumed calls. */
  onResume?(): void | Promise<void>;
}

/** What `create()` may return: the functions alone, or an instance with hooks. */
export type HandlerCreated = readonly AnyFunctionDefinition[] | HandlerInstance;

/** The prompt sentence of a call: a catalogue message (built-in handlers) or a plain sentence. */
export type Description = Message | string;

/** A function declared with TypeBox schemas: argument and output types come from them. */
export interface TypedFunctionSpec<IS extends TSchema, OS extends TSchema> extends Omit<FunctionDefinition<Static<IS>, Static<OS>>, 'descriptor'> {
  readonly descriptor: Omit<DescriptorDraft, 'input_schema' | 'output_schema'> & { readonly input_schema: IS; readonly output_schema: OS };
}

/** A function declared with plain JSON Schemas (or none) and explicitly given types. */
export interface FunctionSpec<I, O> extends Omit<FunctionDefinition<I, O>, 'descriptor'> {
  readonly descriptor: DescriptorDraft;
}

/**
 * Declares a function. The descriptor needs only what its author decides (`id`, `name`,
 * `permission_level`, and the schemas to type it); every field left out gets its pessimistic default
 * (`DESCRIPTOR_DEFAULTS`, docs/handlers/authoring.md). With TypeBox schemas in `descriptor.input_schema`
 * / `output_schema`, `run`'s arguments and result (and `resources`', `describe`'s arguments) are typed
 * from them, with no casts. The descriptor keeps plain JSON Schema (TypeBox's symbol keys dropped), which
 * is what goes on the wire.
 */
export function defineFunction<IS extends TSchema, OS extends TSchema>(spec: TypedFunctionSpec<IS, OS>): FunctionDefinition<Static<IS>, Static<OS>>;
/** Legacy form: plain JSON Schemas and explicitly given types (kept for third-party adapters). */
export function defineFunction<I, O>(def: FunctionSpec<I, O>): FunctionDefinition<I, O>;
export function defineFunction(def: FunctionSpec<unknown, unknown>): FunctionDefinition<unknown, unknown> {
  const d = withDescriptorDefaults(def.descriptor);
  return { ...def, descriptor: { ...d, input_schema: plainSchema(d.input_schema), output_schema: plainSchema(d.output_schema) } };
}

/** A JSON Schema as plain JSON: TypeBox's symbol keys (Kind, Optional) dropped, so the descriptor hashes and compares as sent. */
function plainSchema(s: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(s)) as Record<string, unknown>;
}

/** The same function, with every error its `run` throws passed through `map` (e.g. OS errors to wire errors). */
export function mapErrors<I, O>(def: FunctionDefinition<I, O>, map: (e: unknown) => unknown): FunctionDefinition<I, O> {
  return {
    ...def,
    async run(args, ctx) {
      try {
        return await def.run(args, ctx);
      } catch (e) {
        throw map(e);
      }
    },
  };
}

/** Identity helper for handlers. */
export function defineHandler(h: Handler): Handler {
  return h;
}

/** Shorthand to throw a typed wire error from a handler. */
export function fail(type: ErrorType, message: string, opts?: { details?: Record<string, unknown>; retryable?: boolean; sideEffects?: SideEffects }): never {
  throw new WireError(type, message, opts);
}
