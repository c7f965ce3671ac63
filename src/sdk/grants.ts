/**
 * Grants and resources as handlers see them. A built-in handler declares the grant kinds it owns
 * (`defineGrantKind`): the config shape of one entry (a JSON Schema), how an entry becomes the normal
 * form, and how a granted id covers a requested one. The core validates `grants.<kind>` against it,
 * keeps the grants live (config + what the user added or removed) and checks every resource a call
 * names against them before consent.
 */
import type { Static, TSchema } from '@sinclair/typebox';

/** The normal form of one grant: what handlers and consent see. */
export interface Grant {
  /** The grant kind (the key under `grants:` in the config), e.g. `serial`. */
  readonly kind: string;
  /** The canonical resource id (a path, a port, a printer name); `*` means any. */
  readonly id: string;
  /** The name runtimes may use instead of the id and that people see in prompts and activity. */
  readonly alias?: string | undefined;
  /** `always`: every call on this resource asks, whatever the function's level. */
  readonly ask?: 'always' | undefined;
  /** For kinds that distinguish reading from writing (files); absent means read and write. */
  readonly access?: 'read' | 'read_write' | undefined;
  /** Kind-specific settings (a port's baud rate, …). */
  readonly settings?: Readonly<Record<string, unknown>> | undefined;
  /** Where it comes from: the admin config or the user (control.grants.add). */
  readonly source?: 'config' | 'user' | undefined;
}

/** What `normalize` returns: a grant without its kind and source (the core adds them). */
export type GrantInput = Omit<Grant, 'kind' | 'source'>;

/** What `normalize` gets besides the entry. */
export interface NormalizeContext {
  /** Resolves a path written in the config relative to the config file's folder. */
  resolvePath(p: string): string;
}

/** A grant kind, as a built-in handler declares it. */
export interface GrantKind<E extends TSchema = TSchema> {
  /** The key under `grants:` in the config, e.g. `serial`; lower case letters, digits and `_`. */
  readonly kind: string;
  /** JSON Schema (TypeBox) of ONE entry of `grants.<kind>`. */
  readonly entry: E;
  /** One (schema-valid) entry to the normal form; throw an Error whose message says what is wrong. */
  normalize(entry: Static<E>, ctx: NormalizeContext): GrantInput;
  /** Whether a granted id covers a requested canonical id (default: equal, or the grant is `*`). */
  covers?(grantId: string, requestedId: string): boolean;
  /**
   * How Settings lists what the device has for this kind (Settings → "Find devices"): absent for a kind
   * with no listing (`files`: a folder is picked or typed).
   */
  readonly listing?: GrantListing | undefined;
  /**
   * Whether a requested id may be handed to the device at all under the grant that covers it, checked in
   * the resource check before any prompt and before anything opens it (a `*` serial grant covers only the
   * ports the OS lists, never `/dev/pts/*` or a regular file). Returns the rule that refuses it, or
   * undefined. The call then ends `rejected/permission_denied` with `details.rule`.
   */
  validate?(id: string, grant: Grant): GrantRefusal | undefined | Promise<GrantRefusal | undefined>;
}

/** Why a kind's `validate` refuses a requested id. */
export interface GrantRefusal {
  /** A stable name of the rule (`not_a_listed_port`, `not_a_terminal`, …), sent as `details.rule`. */
  readonly rule: string;
  /** An English sentence naming the id and the rule (the wire `message`). */
  readonly message: string;
}

/** Something a grant could be given for, as the device lists it. */
export interface GrantCandidate {
  /** The id a grant entry takes (port path, printer queue or URI, device id, peripheral id). */
  id: string;
  /** What people recognise it by (the device's label, make and model, name). */
  label?: string;
  /** The alias it is shared under, when it is. */
  alias?: string;
  granted?: boolean;
}

/** A grant kind's device listing: the function that lists, its arguments, how its output reads, and the id key of an object entry. */
export interface GrantListing {
  /** The id of the (read-only) function of the same handler that lists the devices. */
  readonly function: string;
  /** Its arguments (default `{}`). */
  readonly args?: Record<string, unknown> | undefined;
  /** Its output as candidates. */
  candidates(out: unknown): GrantCandidate[];
  /** The key of a `grants.<kind>` object entry that holds the id (`{ <idKey>: id, alias }`). */
  readonly idKey: string;
}

/**
 * The common listing: `out[listKey]` is an array of objects; each gives a candidate from its `idField`,
 * the first of `labelFields` present (when it differs from the id), and its `alias` and `granted`.
 */
export function listingCandidates(out: unknown, listKey: string, idField: string, labelFields: readonly string[]): GrantCandidate[] {
  const list = (out as Record<string, unknown> | undefined)?.[listKey];
  const items = Array.isArray(list) ? list.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object') : [];
  return items.map((p) => {
    const c: GrantCandidate = { id: String(p[idField]) };
    const label = labelFields.map((f) => p[f]).find((v) => v !== undefined && v !== null);
    if (typeof label === 'string' && label && label !== c.id) c.label = label;
    if (typeof p['alias'] === 'string') c.alias = p['alias'];
    if (typeof p['granted'] === 'boolean') c.granted = p['granted'];
    return c;
  });
}

/** Declares a grant kind (identity helper that keeps the entry type). */
export function defineGrantKind<E extends TSchema>(k: GrantKind<E>): GrantKind<E> {
  if (!/^[a-z][a-z0-9_]*$/.test(k.kind)) throw new Error(`grant kind "${k.kind}": use lower case letters, digits and _`);
  return k;
}

/** The default `covers`: the same id, or a `*` grant. */
export function defaultCovers(grantId: string, requestedId: string): boolean {
  return grantId === '*' || grantId === requestedId;
}

/** The live view of the grants a handler gets (`env.grants`) and `resources()` reads. */
export interface GrantsView {
  /** Every grant of a kind, as it is now. */
  list(kind: string): Grant[];
  /**
   * The grant a name addresses: by alias first, then by id (through the kind's `covers`), then a `*`
   * grant (returned with `id` set to the requested name).
   */
  find(kind: string, nameOrAlias: string): Grant | undefined;
  /** Called after any grant is added or removed (config reload, control.grants.add/remove). */
  on(event: 'change', cb: () => void): void;
  off(event: 'change', cb: () => void): void;
}

/** One resource a call touches, as `resources()` returns it. */
export interface CallResource {
  /** A grant kind (checked against the grants before consent) or another word (never granted: asks). */
  readonly kind: string;
  /** Canonical id (the granted id for grant kinds). */
  readonly id: string;
  /** What people see (the grant's alias); defaults to the id. */
  readonly label?: string | undefined;
  /** `always`: this call asks whatever the function's level (also set by the core from the grant). */
  readonly ask?: 'always' | undefined;
  /** Whether the call writes this resource (default: the descriptor's `risk.read_only` says). */
  readonly access?: 'read' | 'write' | undefined;
  /** The lock key: default `${kind}:${id}`; a string for a custom key; false for no lock. */
  readonly lock?: string | false | undefined;
}

/** What `resources()` gets besides the arguments. */
export interface ResourceContext {
  readonly grants: GrantsView;
}

/** A view with no grants (what third-party adapters get as `env.grants`). */
export const NO_GRANTS: GrantsView = Object.freeze({
  list: () => [],
  find: () => undefined,
  on: () => undefined,
  off: () => undefined,
});
