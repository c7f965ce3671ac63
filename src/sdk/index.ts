/**
 * The public handler SDK: the only entry that handlers (built-in and third-party) import.
 * A handler is a folder under `handlers/` with a manifest (`tool.aios.yaml`) and a module whose default
 * export is a `Handler`.
 */
import { Type } from '@sinclair/typebox';
import { BlobRef, type Descriptor, type Requester } from '../protocol/messages.js';
import { WireError, type ErrorType, type SideEffects } from '../protocol/errors.js';

export { WireError };
export type { Descriptor, Requester, BlobRef, ErrorType, SideEffects };

/** The JSON Schema of a blob reference (PROTOCOL.md §9) for a function's input or output schema: the wire shape, closed. */
export const BlobRefSchema = Type.Object(BlobRef.properties, { additionalProperties: false });

/** A descriptor as a handler declares it; the host computes `descriptor_hash`. */
export type DescriptorInput = Omit<Descriptor, 'descriptor_hash'>;

/** Minimal structured logger (pino-compatible). Never pass argument contents, tokens or file data. */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

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

/** What a running call gets. */
export interface CallContext {
  readonly callId: string;
  readonly functionId: string;
  /** Fires on timeout, cancel, lease expiry or shutdown. Handlers must stop promptly and release resources. */
  readonly signal: AbortSignal;
  readonly requester: Requester | undefined;
  readonly log: Logger;
  readonly blobs: BlobClient;
  /** Report progress (throttled). */
  progress(p: Progress): void;
  /**
   * Declares the point of no return: after this, cancel answers `not_cancellable` and a lease expiry
   * lets the call finish.
   */
  commit(): void;
}

/** Grants as configured (PROTOCOL.md §11 `grants`). */
export interface Grants {
  files?: { path: string; access: 'read' | 'read_write'; name?: string }[];
  serial?: string[];
  printers?: string[];
  cameras?: string[];
  microphones?: string[];
  screens?: string[];
  bluetooth?: string[];
}

/** What a handler gets when it is created. */
export interface HandlerEnv {
  readonly grants: Grants;
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
   * Resources to lock for these (validated) arguments, e.g. `serial:/dev/ttyUSB0`. Defaults to
   * `descriptor.locks`.
   */
  locks?(args: I): string[];
  /**
   * One plain sentence saying what will happen, for the confirmation prompt, built from the validated
   * arguments (e.g. "Overwrite report.docx in Documents (14 KB)"). May look at the file system.
   */
  describe?(args: I): string | Promise<string>;
  /**
   * The resource a remembered decision is scoped to (e.g. the granted folder or the port); defaults to '*'.
   */
  resource?(args: I): string;
  /** Runs the call. Throw `WireError` for typed failures; anything else becomes `execution_failed`. */
  run(args: I, ctx: CallContext): Promise<O>;
}

/** A handler module's default export. */
export interface Handler {
  /** Folder name and manifest id. */
  readonly name: string;
  create(env: HandlerEnv): FunctionDefinition<never, unknown>[] | Promise<FunctionDefinition<never, unknown>[]>;
}

/** Identity helper for typed function definitions. */
export function defineFunction<I, O>(def: FunctionDefinition<I, O>): FunctionDefinition<I, O> {
  return def;
}

/** Identity helper for handlers. */
export function defineHandler(h: Handler): Handler {
  return h;
}

/** Shorthand to throw a typed wire error from a handler. */
export function fail(type: ErrorType, message: string, opts?: { details?: Record<string, unknown>; retryable?: boolean; sideEffects?: SideEffects }): never {
  throw new WireError(type, message, opts);
}
